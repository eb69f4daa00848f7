"""A session's title is whatever a person pasted as the first prompt or ``/title``, or what an
import carried: ``dsh sessions list`` shows it as one line, a terminal escape in it as its
escape (``dsh.transcript.titles.trim_title``), from a session read whole and from the summary
cache alike; a workspace's directory name in ``--all`` the same. Real sessions on disk, the
real ``dsh`` console script as a subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from dsh.events import SessionTitle
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.conftest import DSH
from tests.helpers import run_session_id

OSC_CSI_NEWLINE = "\x1b]0;pwned\x07\x1b[31m\nred"
"""A terminal title change (OSC, ended by a bell), a colour (CSI) and a second line."""
SHOWN = "\\x1b]0;pwned\\x07\\x1b[31m red"
"""``OSC_CSI_NEWLINE`` as a listing shows it."""


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([DSH, *args], env=env, cwd=cwd, capture_output=True, timeout=60)


def row_of(done: subprocess.CompletedProcess[bytes], session_id: str) -> str:
    """The listing's one row of ``session_id``; nothing raw on stdout or stderr."""
    assert done.returncode == 0, done.stderr
    for stream in (done.stdout, done.stderr):
        assert b"\x1b" not in stream and b"\x07" not in stream, stream[:300]
    (row,) = [line for line in done.stdout.decode().splitlines() if line.startswith(session_id)]
    return row


def test_a_first_prompt_with_escapes_is_listed_escaped_on_one_line(
    tmp_path: Path, env: dict[str, str]
) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "ok"}]))
    ran = dsh("run", "--script", str(script), f"fix {OSC_CSI_NEWLINE}", env=env, cwd=tmp_path)
    session_id = run_session_id(ran.stderr)
    for _ in range(2):  # read whole, then from the summary cache
        row = row_of(dsh("sessions", "list", env=env, cwd=tmp_path), session_id)
        assert row.endswith(f"1 turn  fix {SHOWN}")


def test_a_title_with_escapes_is_listed_escaped_with_its_workspace(
    tmp_path: Path, env: dict[str, str]
) -> None:
    workspace = tmp_path / f"ws{OSC_CSI_NEWLINE}"
    workspace.mkdir()
    with Session.create(JsonlStore(Path(env["DSH_HOME"])), cwd=workspace) as session:
        session.append(SessionTitle(title=f"pasted {OSC_CSI_NEWLINE}"))
        session_id = session.id
    row = row_of(dsh("sessions", "list", "--all", env=env, cwd=tmp_path), session_id)
    assert row.endswith(f"0 turns  pasted {SHOWN}  {tmp_path}/ws{SHOWN}")
    (workspace / ".dsh").mkdir()
    (workspace / ".dsh" / "config.toml").write_text("")  # so the listing names its trust
    here = dsh("sessions", "list", env=env, cwd=workspace)
    assert row_of(here, session_id).endswith(f"0 turns  pasted {SHOWN}")
    assert here.stderr.decode().splitlines()[-1] == (
        f"workspace {tmp_path}/ws{SHOWN}: its .dsh/config.toml is not trusted (see `dsh trust`)"
    )
