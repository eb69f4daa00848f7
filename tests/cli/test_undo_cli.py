"""``dsh undo [--session ID] [--dry-run]`` as a real process, on a session ``dsh run`` made."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.agent.test_undo_kill import KILLED_UNDO
from tests.cli.test_run_cli import dsh, env, write_script
from tests.helpers import run_session_id

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
    ran = dsh("run", "--yes", "--script", str(script), "edit it", env=env, cwd=workspace)
    assert (workspace / "a.txt").read_bytes() == b"alpha\r\nBETA"
    return workspace, run_session_id(ran.stderr)


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


def test_a_killed_undo_is_cleaned_up_when_dsh_run_opens_the_session_before_its_turn(tmp_path, env):
    """``dsh undo`` killed (SIGKILL) after moving b.txt aside and writing a.txt's restore beside
    it: ``dsh run --session`` puts b.txt back and removes the restore before the model's first
    call, so the turn reads b.txt; the one line that says so is printed once."""
    workspace, session_id = edit_session(tmp_path, env)
    home = env["DSH_HOME"]
    child = subprocess.run(
        [sys.executable, "-c", KILLED_UNDO, home, session_id, "replace", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, (child.stdout, child.stderr)
    assert not (workspace / "b.txt").exists()  # moved aside by the killed undo
    (aside,) = [p.name for p in workspace.iterdir() if p.name.startswith(".b.txt.dsh-undo-")]
    tag = aside.removeprefix(".b.txt.dsh-undo-").removesuffix(".old")
    read = {"name": "read_file", "arguments": {"path": "b.txt"}}
    script = write_script(
        tmp_path / "s2.json",
        [*json.loads((tmp_path / "s.json").read_text()), {"toolCalls": [read]}, {"text": "seen"}],
    )
    ran = dsh(
        "run",
        "--script",
        str(script),
        "--session",
        session_id,
        "read b.txt",
        env=env,
        cwd=workspace,
    )
    line = (
        "dsh: warning: The undo of turn 1 was interrupted (its process ended before it "
        f"finished); cleaned up after it: removed .a.txt.dsh-undo-{tag}.new, put back b.txt; undo "
        "again to finish it"
    )
    assert ran.stderr.splitlines().count(line) == 1, ran.stderr
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt", "b.txt"]
    assert (workspace / "a.txt").read_bytes() == b"alpha\r\nBETA"  # as the turn left it
    events = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=tmp_path)
    logged = [json.loads(line) for line in events.stdout.splitlines()]
    read_result = [e for e in logged if e["type"] == "tool/result"][-1]["data"]["message"]
    assert read_result["content"][0]["content"] == [{"type": "text", "text": "1\tnew"}]
    again = dsh("undo", "--session", session_id, env=env, cwd=tmp_path)
    assert again.stderr == ""  # nothing left to clean up: said once
    assert again.stdout.splitlines()[0] == "Undid turn 1:"
    assert not (workspace / "b.txt").exists()
    assert (workspace / "a.txt").read_bytes() == b"alpha\r\nbeta"


INTERRUPTED_UNDO = """
import os, signal, sys
from dsh.cli.main import main

first = getattr(signal, sys.argv[1])
real = os.rename


def rename(src, dst, **dirs):
    if os.fspath(src).endswith(".old"):  # putting b.txt back: a Ctrl-C
        signal.raise_signal(signal.SIGINT)
    real(src, dst, **dirs)
    if os.fspath(dst).endswith(".old"):  # b.txt moved aside: the first signal
        os.kill(os.getpid(), first)


os.rename = rename
sys.argv = ["dsh", "undo", "--session", sys.argv[2]]
main()
"""


def test_dsh_undo_stopped_by_signals_mid_way_puts_back_what_it_did_and_says_so(tmp_path, env):
    """``dsh undo`` (the real command line) gets SIGTERM as it moves b.txt aside and a Ctrl-C
    as it puts b.txt back: both wait until every file is as the turn left it and the answer is
    logged; it prints the answer and exits 143 (SIGTERM's), as a stopped ``dsh run`` does."""
    workspace, session_id = edit_session(tmp_path, env)
    stopped = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_UNDO, "SIGTERM", session_id],
        env=env,
        cwd=workspace,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr
    assert stopped.stdout.splitlines() == [
        "Undo of turn 1 stopped: interrupted before it was done",
        "  nothing changed: every file is as the turn left it",
    ]
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt", "b.txt"]  # nothing aside
    assert (workspace / "a.txt").read_bytes() == b"alpha\r\nBETA"
    assert (workspace / "b.txt").read_text() == "new\n"
    done = dsh("undo", env=env, cwd=workspace)
    assert done.stdout.splitlines()[0] == "Undid turn 1:"
    assert (workspace / "a.txt").read_bytes() == b"alpha\r\nbeta"
