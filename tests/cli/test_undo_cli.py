"""``dsh undo [--session ID] [--dry-run]`` as a real process, on a session ``dsh run`` made."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_run_cli import dsh, env, write_script

__all__ = ["env"]  # the fixture, shared with dsh run's tests


def edit_session(tmp_path: Path, env: dict[str, str]) -> tuple[Path, str]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_bytes(b"alpha\r\nbeta")
    call = {"name": "edit_file", "arguments": {"path": "a.txt", "old": "beta", "new": "BETA"}}
    created = {"name": "write_file", "arguments": {"path": "b.txt", "content": "new\n"}}
    script = write_script(
        tmp_path / "s.json", [{"toolCalls": [call]}, {"toolCalls": [created]}, {"text": "done"}]
    )
    out = dsh("run", "--yes", "--script", str(script), "edit it", env=env, cwd=workspace).stdout
    assert (workspace / "a.txt").read_bytes() == b"alpha\r\nBETA"
    return workspace, out.splitlines()[-1].removeprefix("session: ")


def test_dsh_undo_reverts_the_last_turn_of_this_directorys_latest_session(tmp_path, env):
    workspace, session_id = edit_session(tmp_path, env)
    dry = dsh("undo", "--dry-run", env=env, cwd=workspace)
    assert dry.stdout.splitlines() == [
        "Would undo turn 1:",
        "  would restore a.txt",
        "  would delete b.txt (created by the turn)",
    ]
    assert (workspace / "b.txt").exists()
    done = dsh("undo", env=env, cwd=workspace)
    assert done.stdout.splitlines() == [
        "Undid turn 1:",
        "  restored a.txt",
        "  deleted b.txt (created by the turn)",
    ]
    assert (workspace / "a.txt").read_bytes() == b"alpha\r\nbeta"
    assert not (workspace / "b.txt").exists()
    again = dsh("undo", "--session", session_id[:12], env=env, cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.startswith("Nothing to undo")
    events = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=tmp_path)
    logged = [json.loads(line) for line in events.stdout.splitlines()]
    types = [event["type"] for event in logged]
    assert types[-3:] == ["command/run", "user/message", "command/done"]
    assert logged[-3]["data"]["name"] == "undo" and logged[-1]["data"]["ok"] is True


def test_dsh_undo_refused_exits_1_and_names_the_changed_file(tmp_path, env):
    workspace, session_id = edit_session(tmp_path, env)
    (workspace / "b.txt").write_text("the person's edit\n")
    refused = dsh("undo", "--session", session_id, env=env, cwd=tmp_path, check=False)
    assert refused.returncode == 1
    assert refused.stdout.splitlines()[1:] == [
        "  b.txt: changed since turn 1 (its content is not what write_file left)"
    ]
    assert (workspace / "a.txt").read_bytes() == b"alpha\r\nBETA"
    unknown = dsh("undo", "--session", "nope", env=env, cwd=tmp_path, check=False)
    assert unknown.returncode == 1 and unknown.stderr.startswith("dsh: error: no session 'nope'")


def test_dsh_undo_in_a_directory_without_a_session_says_to_give_one(tmp_path, env):
    empty = dsh("undo", env=env, cwd=tmp_path, check=False)
    assert empty.returncode == 1
    assert empty.stderr == (
        f"dsh: error: no session started in {tmp_path.resolve()}; give --session ID "
        "(see `dsh sessions list --all`)\n"
    )
