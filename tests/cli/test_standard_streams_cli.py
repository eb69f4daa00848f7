"""dsh's standard streams as a shell tool's (the real console script, as a subprocess).

A reader that stops reading (``dsh sessions list | head -1``) ends a command quietly with 141,
as it ends ``dsh run``; a closed stdin, stdout or stderr (``<&-``, ``>&-``, ``2>&-``) is
``/dev/null`` to dsh: no traceback, and the session is whole."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from dsh.cli.standard_streams import CANCELLED_OUTPUT_CLOSED
from dsh.events import TurnEndEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.conftest import DSH
from tests.cli.test_interrupted_cli import wait_for
from tests.helpers import run_session_id


def dsh(*args: str, env, cwd, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120, **kwargs
    )


def in_shell(command: str, *, env, cwd) -> subprocess.CompletedProcess[str]:
    """``command`` run by ``sh`` (which can close a standard stream), ``$DSH`` the console
    script; its stdout and stderr are captured unless the command closes them."""
    return subprocess.run(
        ["sh", "-c", command],
        env={**env, "DSH": DSH},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def scripted_session(tmp_path: Path, env, *answers: str) -> str:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": answer} for answer in answers]))
    prompts = [f"prompt {n}" for n in range(len(answers))]
    ran = dsh("run", "--script", str(script), *prompts, env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    return run_session_id(ran.stderr)


def into_a_closed_pipe(*args: str, env, cwd) -> subprocess.CompletedProcess[str]:
    """Run dsh with stdout a pipe whose reader has already gone: its first write fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [DSH, *args],
            env=env,
            cwd=cwd,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)


def test_sessions_list_into_a_pipe_its_reader_closed_ends_quietly_with_141(tmp_path, env):
    scripted_session(tmp_path, env, "one")

    done = into_a_closed_pipe("sessions", "list", env=env, cwd=tmp_path)

    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.parametrize(
    "args",
    [("--help",), ("--version",), ("run", "--help"), ("sessions", "list", "--help")],
    ids=" ".join,
)
def test_help_and_version_into_a_pipe_its_reader_closed_end_quietly_with_141(tmp_path, env, args):
    """``dsh --help | head -1`` whose reader is gone before dsh writes: click printed the root
    help (and ``--version``) while parsing, before any command ran, and exited 1 on the broken
    pipe; a command's ``--help`` already ended with 141, as every command does."""
    done = into_a_closed_pipe(*args, env=env, cwd=tmp_path)

    assert (done.returncode, done.stderr) == (141, "")


def test_every_view_of_sessions_show_into_a_closed_pipe_ends_quietly(tmp_path, env):
    session_id = scripted_session(tmp_path, env, "one", "two")

    for view in ("transcript", "events", "surface", "settings"):
        shown = ("sessions", "show", session_id, "--view", view)
        done = into_a_closed_pipe(*shown, env=env, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (141, ""), view
    done = into_a_closed_pipe("sessions", "export", session_id, env=env, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (141, "")


def test_plain_run_cancels_the_running_turn_once_its_reader_goes_away(tmp_path, env):
    """``dsh run "a" "b" | head -1``: without --json a turn writes nothing before its final
    answer, so the reader that left after the first answer was met only once the second turn
    had run in full (its tools included). Now it is seen while the turn runs: its ``bash`` call
    (which would wait for ever) is cancelled, the turn's end says the output was closed, and
    dsh exits 141, quietly."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    waits = {"name": "bash", "arguments": {"command": "touch started; cat gate"}}
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "first"}, {"toolCalls": [waits]}, {"text": "never"}]))
    child = subprocess.Popen(
        [DSH, "run", "--yes", "--script", str(script), "a", "b"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.readline() == "first\n"  # like `| head -1`
        wait_for(tmp_path / "started", child)  # the second turn's call is running
        child.stdout.close()  # the reader goes away
        status = child.wait(timeout=60)
        err = child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        with contextlib.suppress(OSError):  # a `cat` left waiting (the check failed) ends
            os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))

    store = JsonlStore(Path(env["DSH_HOME"]))
    (header,) = store.list()
    assert (status, err) == (141, f"session: {header.id}\n")  # said as it started: no more
    events = Session.open(store, header.id).events
    ends = [e.data.reason for e in events if isinstance(e, TurnEndEvent)]
    assert [end.kind for end in ends] == ["completed", "aborted"]
    assert ends[1].error == CANCELLED_OUTPUT_CLOSED


def test_run_with_stdin_closed_reads_it_as_empty(tmp_path, env):
    done = in_shell('exec "$DSH" run - <&-', env=env, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr == "dsh: error: the prompt '-' reads stdin, which was empty\n"
    assert not (Path(env["DSH_HOME"]) / "sessions").exists()


def test_run_with_stdout_closed_runs_its_turn_and_keeps_the_session_whole(tmp_path, env):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "answered"}]))

    done = in_shell(f'exec "$DSH" run --script "{script}" hello >&-', env=env, cwd=tmp_path)

    store = JsonlStore(Path(env["DSH_HOME"]))
    (header,) = store.list()
    assert (done.returncode, done.stderr) == (0, f"session: {header.id}\n")
    events = Session.open(store, header.id).events
    ends = [e.data.reason.kind for e in events if type(e).__name__ == "TurnEndEvent"]
    assert ends == ["completed"]


def test_run_with_stderr_closed_still_answers_on_stdout(tmp_path, env):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "answered"}]))

    done = in_shell(f'exec "$DSH" run --script "{script}" hello 2>&-', env=env, cwd=tmp_path)

    assert done.returncode == 0
    assert done.stdout == "answered\n"  # its session line went to the closed stderr
