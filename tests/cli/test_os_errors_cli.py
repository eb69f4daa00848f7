"""A file the OS refuses (a missing directory, a home dsh cannot write) is one ``dsh: error:``
line naming it and exit 1, not a traceback (the real entry point, as a subprocess)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import DSH
from tests.helpers import run_session_id


def dsh(*args: str, env, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_export_into_a_missing_directory_is_one_line(tmp_path, env):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    ran = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    session_id = run_session_id(ran.stderr)
    target = tmp_path / "no-such-dir" / "out.md"

    done = dsh("sessions", "export", session_id, "-o", str(target), env=env, cwd=tmp_path)

    assert done.returncode == 1
    assert done.stderr == f"dsh: error: {target}: No such file or directory\n"


def test_trust_when_the_config_cannot_be_written_is_one_line(tmp_path, env):
    home = Path(env["DSH_HOME"])
    (home / ".config.toml.lock").mkdir(parents=True)  # the lock trust takes to write it

    done = dsh("trust", str(tmp_path), env=env, cwd=tmp_path)

    assert done.returncode == 1
    assert done.stderr == f"dsh: error: {home / '.config.toml.lock'}: Is a directory\n"
    assert not (home / "config.toml").exists()


def test_import_when_the_imports_directory_cannot_be_made_is_one_line(tmp_path, env):
    home = Path(env["DSH_HOME"])
    home.mkdir()
    (home / "imports").write_text("a file where a directory belongs")
    log = tmp_path / "up.jsonl"
    header = {"type": "session", "version": 0, "id": "u1", "createdAt": 1, "delegationDepth": 0}
    log.write_text(json.dumps(header) + "\n")

    done = dsh("sessions", "import", str(log), env=env, cwd=tmp_path)

    assert done.returncode == 1
    assert done.stderr.startswith("dsh: error: ") and len(done.stderr.splitlines()) == 1
    assert str(home / "imports") in done.stderr
    assert "no sessions" in dsh("sessions", "list", "--all", env=env, cwd=tmp_path).stdout


def test_a_deleted_current_directory_is_named_as_such(tmp_path, env):
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(
        ["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{DSH}" sessions list'],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("dsh: error: the current directory no longer exists")
    assert done.stderr.count("\n") == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full to stand for a full disk")
def test_export_to_a_full_disk_names_the_file_it_could_not_write(tmp_path, env):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    ran = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    session_id = run_session_id(ran.stderr)

    done = dsh("sessions", "export", session_id, "-o", "/dev/full", env=env, cwd=tmp_path)

    assert done.returncode == 1
    assert done.stderr == "dsh: error: /dev/full: No space left on device\n"
