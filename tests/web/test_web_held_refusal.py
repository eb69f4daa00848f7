"""A session a real ``dsh web`` took by a page's prompt stays its own while the server runs (the
page never lets go of it), so ``dsh run --session`` on it is refused in one line that says so
and what to do: go on in that page, or stop that server; once it stopped, the run goes ahead."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.web.real_command import DSH, dsh_web_process
from tests.web.test_web_route_flags import session_from_the_page


def dsh_run(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(home)
    return subprocess.run(
        [DSH, "run", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_a_session_the_web_server_holds_is_refused_with_what_to_do(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "from the page"}, {"text": "from the terminal"}]))
    flags = ("--provider", "scripted", "--script", str(script))
    home = tmp_path / "home"
    with dsh_web_process(tmp_path, flags) as web:
        sid = session_from_the_page(web, tmp_path, "hi")  # its turn ended: idle, still held
        refused = dsh_run(home, tmp_path, "--session", sid, *flags, "go on")
    assert refused.returncode == 1
    assert re.fullmatch(
        f"dsh: error: session {sid} is already open for writing by process \\d+ \\(dsh web\\), "
        "which holds it until that server stops: go on in its page, or stop that `dsh web` "
        r"\(Ctrl-C where it runs\)\n",
        refused.stderr,
    ), refused.stderr
    went_on = dsh_run(home, tmp_path, "--session", sid, *flags, "go on")  # the server stopped
    assert went_on.returncode == 0, went_on.stderr
