"""A workspace whose path is not UTF-8 cannot be recorded in a session log: one line, exit 2,
and no session (not a traceback and an empty session directory)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.conftest import DSH


def test_a_workspace_whose_path_is_not_utf8_is_one_line_and_creates_nothing(tmp_path, env):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    workspace = os.path.join(os.fsencode(tmp_path), b"ws\xff")
    os.mkdir(workspace)

    done = subprocess.run(
        [DSH, "run", "--script", str(script), "hello"],
        env=env,
        cwd=workspace,
        capture_output=True,
        timeout=60,
    )

    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"dsh: error: the workspace {tmp_path}/ws\\xff is not a UTF-8 path, which a session log "
        "cannot record; run dsh in a directory whose path is UTF-8 (or pass --cwd)"
    ]
    sessions = Path(env["DSH_HOME"]) / "sessions"
    assert not sessions.exists() or list(sessions.iterdir()) == []
