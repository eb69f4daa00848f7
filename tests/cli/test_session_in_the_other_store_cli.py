"""A session kept by the store that is not configured (moved by ``dsh sessions migrate``, or
the setting changed since) is not just "no session" to the commands given its id (``sessions
show``, ``run --session``, ``run --replay``, ``undo --session``): they name the store that has
it and how to reach it. The real console script, real store files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import DSH
from tests.helpers import run_session_id


def dsh(*args: str, env, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(("kept", "configured"), [("sqlite", "jsonl"), ("jsonl", "sqlite")])
def test_a_session_in_the_other_store_is_named_there_by_every_command(
    tmp_path: Path, env: dict[str, str], kept: str, configured: str
) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}, {"text": "again"}]))
    env["DSH_STORE_BACKEND"] = configured
    ran = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    session_id = run_session_id(ran.stderr)
    moved = dsh("sessions", "migrate", "--to", kept, env=env, cwd=tmp_path)
    assert moved.returncode == 0, moved.stderr
    prefix = session_id[:15]

    commands = [
        ("sessions", "show", session_id),
        ("sessions", "show", prefix),
        ("run", "--session", prefix, "--script", str(script), "more"),
        ("run", "--replay", session_id, "more"),
        ("undo", "--session", session_id),
    ]
    for command in commands:
        done = dsh(*command, env=env, cwd=tmp_path)
        assert done.returncode != 0 and done.stderr.count("\n") == 1, (command, done.stderr)
        wanted = command[2] if command[0] != "undo" else session_id
        assert done.stderr == (
            f"dsh: error: no session {wanted!r} in the {configured} store; the {kept} store "
            f"has session {session_id} (same dsh home): use `DSH_STORE_BACKEND={kept} dsh …`, or "
            f"move its sessions here with `dsh sessions migrate --to {configured}`\n"
        ), command

    env["DSH_STORE_BACKEND"] = kept  # as the error says
    assert dsh("sessions", "show", prefix, env=env, cwd=tmp_path).returncode == 0


def test_an_id_in_neither_store_is_still_no_session(tmp_path: Path, env: dict[str, str]) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    ran = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert dsh("sessions", "migrate", "--to", "sqlite", env=env, cwd=tmp_path).returncode == 0
    done = dsh("sessions", "show", "nope", env=env, cwd=tmp_path)
    assert done.stderr == "dsh: error: no session 'nope' (see `dsh sessions list --all`)\n"
