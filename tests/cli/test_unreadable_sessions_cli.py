"""A session whose log cannot be read at all (an empty log, one that is a directory, one the OS
will not open) is named with its reason by every command that is given its id, not as "no
session"; and `dsh sessions repair`, which cannot help there, is not suggested. The real console
script, as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import DSH
from tests.helpers import run_session_id


def dsh(*args: str, env, cwd, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def scripted_session(tmp_path: Path, env) -> tuple[str, Path]:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}, {"text": "again"}]))
    ran = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    session_id = run_session_id(ran.stderr)
    return session_id, Path(env["DSH_HOME"]) / "sessions" / session_id / "session.jsonl"


def assert_named_not_missing(done: subprocess.CompletedProcess[str], reason: str) -> None:
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("dsh: error: ") and done.stderr.count("\n") == 1
    assert reason in done.stderr and "no session" not in done.stderr
    assert "dsh sessions repair" not in done.stderr


def test_an_empty_log_is_named_by_run_and_no_repair_is_suggested(tmp_path, env):
    session_id, log = scripted_session(tmp_path, env)
    log.write_bytes(b"")  # a crash before the header was written

    resumed = dsh("run", "--session", session_id, "--script", str(tmp_path / "s.json"), "more",
                  env=env, cwd=tmp_path)  # fmt: skip
    shown = dsh("sessions", "show", session_id, env=env, cwd=tmp_path)
    listed = dsh("sessions", "list", env=env, cwd=tmp_path)

    assert_named_not_missing(resumed, "line 1: missing session header")
    assert_named_not_missing(shown, "line 1: missing session header")
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith(session_id)]
    assert row == f"{session_id}  UNREADABLE: line 1: missing session header"
    repair = dsh("sessions", "repair", session_id, env=env, cwd=tmp_path)
    assert repair.returncode == 1 and "nothing to salvage" in repair.stderr  # as it always said


def test_a_log_that_is_a_directory_is_listed_and_named(tmp_path, env):
    session_id, log = scripted_session(tmp_path, env)
    log.unlink()
    log.mkdir()

    listed = dsh("sessions", "list", env=env, cwd=tmp_path)
    shown = dsh("sessions", "show", session_id, env=env, cwd=tmp_path)
    resumed = dsh("undo", "--session", session_id, env=env, cwd=tmp_path)

    (row,) = [line for line in listed.stdout.splitlines() if line.startswith(session_id)]
    assert row == f"{session_id}  UNREADABLE: cannot read {log}: Is a directory"
    assert_named_not_missing(shown, f"cannot read {log}: Is a directory")
    assert_named_not_missing(resumed, f"cannot read {log}: Is a directory")


def without_permission_override() -> tuple[str, ...]:
    """A command prefix under which file permissions hold: none for a user, and for root
    ``setpriv`` dropping the capabilities that override them."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads every file and setpriv is not installed to stop that")
    drop = "-dac_override,-dac_read_search"
    return (setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}")


def test_a_log_the_os_refuses_to_read_is_named_by_run(tmp_path, env):
    prefix = without_permission_override()
    session_id, log = scripted_session(tmp_path, env)
    before = log.read_bytes()
    log.chmod(0)
    try:
        resumed = dsh("run", "--session", session_id, "--script", str(tmp_path / "s.json"),
                      "more", env=env, cwd=tmp_path, prefix=prefix)  # fmt: skip
        listed = dsh("sessions", "list", env=env, cwd=tmp_path, prefix=prefix)
    finally:
        log.chmod(0o644)

    assert_named_not_missing(resumed, f"cannot read {log}: Permission denied")
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith(session_id)]
    assert row == f"{session_id}  UNREADABLE: cannot read {log}: Permission denied"
    assert log.read_bytes() == before
