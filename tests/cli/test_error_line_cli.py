"""The CLI's one-line errors (``dsh: error: …`` on stderr) show an error's text as
``dsh.errors.error_line`` makes it: one line, a terminal escape as its escape (never sent to
the terminal), at most ``ERROR_LINE_CHARS`` characters; a harness error (``context.fail``), a
file the OS refused and click's usage errors alike. The real entry point, as a subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from dsh.errors import ERROR_LINE_CHARS
from dsh.store import JsonlStore
from tests.cli.conftest import DSH
from tests.helpers import run_session_id
from tests.hostile_errors import HOSTILE, assert_shown_as_error_line, unopenable_session


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([DSH, *args], env=env, cwd=cwd, capture_output=True, timeout=60)


def error_said(done: subprocess.CompletedProcess[bytes]) -> str:
    """The one line ``dsh`` wrote on stderr, after ``dsh: error: ``."""
    assert b"\x1b" not in done.stderr and b"\x07" not in done.stderr
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith("dsh: error: "), line[:200]
    return line.removeprefix("dsh: error: ")


def test_a_session_that_does_not_load_is_one_bounded_line(
    tmp_path: Path, env: dict[str, str]
) -> None:
    session_id, text = unopenable_session(JsonlStore(Path(env["DSH_HOME"])), tmp_path)
    done = dsh("sessions", "show", session_id, env=env, cwd=tmp_path)
    assert done.returncode == 1
    hint = f" (try `dsh sessions repair {session_id}`)"  # the id found in the whole text
    said = error_said(done)
    assert said.endswith(hint)
    assert_shown_as_error_line(said.removesuffix(hint), text)


def test_a_file_the_os_refuses_is_one_bounded_line(tmp_path: Path, env: dict[str, str]) -> None:
    script = tmp_path / "s.json"
    script.write_text('[{"text": "hi"}]')
    ran = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    session_id = run_session_id(ran.stderr)
    # a name of many parts (each within NAME_MAX) under a directory that does not exist
    target = tmp_path / "no-such-dir" / HOSTILE[:40] / (("x" * 200 + "/") * 9) / "out.md"
    done = dsh("sessions", "export", session_id, "-o", str(target), env=env, cwd=tmp_path)
    assert done.returncode == 1
    assert_shown_as_error_line(error_said(done), f"{target}: No such file or directory")


def test_a_usage_error_is_one_bounded_line(tmp_path: Path, env: dict[str, str]) -> None:
    done = dsh("sessions", HOSTILE, env=env, cwd=tmp_path)  # a first word alone is a prompt
    assert done.returncode == 2
    said = error_said(done)
    assert said.endswith(" (see `dsh sessions --help`)")
    shown = said.removesuffix(" (see `dsh sessions --help`)")
    assert shown.startswith("No such command '\\x1b[31mowned") and shown.endswith("…")
    assert len(shown) == ERROR_LINE_CHARS


def test_a_session_whose_header_does_not_load_is_listed_on_one_bounded_line(
    tmp_path: Path, env: dict[str, str]
) -> None:
    home = Path(env["DSH_HOME"])
    log = home / "sessions" / "s1" / "session.jsonl"
    log.parent.mkdir(parents=True)
    header = {"type": "session", "version": 1, "id": "s1", "cwd": "/x", "createdAt": 1}
    log.write_text(json.dumps({**header, HOSTILE: 1}) + "\n")
    (unreadable,) = JsonlStore(home).unreadable()
    done = dsh("sessions", "list", "--all", env=env, cwd=tmp_path)
    assert done.returncode == 0 and b"\x1b" not in done.stdout
    (row,) = [line for line in done.stdout.decode().splitlines() if line.startswith("s1 ")]
    prefix = "s1  UNREADABLE: "  # no repair hint: without its header nothing is kept
    assert "dsh sessions repair" not in row
    assert_shown_as_error_line(row, unreadable.reason.removeprefix(f"{log}: "), prefix)
