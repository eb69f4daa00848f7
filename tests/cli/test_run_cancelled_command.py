"""``dsh run`` stopped while a ``bash`` call runs (Ctrl-C, a CI timeout's SIGTERM, a closed
terminal's SIGHUP, the reader of its output going away): the call's result keeps what the command
printed until then, marked as cut short, the command is killed, and the turn's end says what
stopped it.

The real console script with the scripted provider, as a subprocess. In the signal tests the
command prints three lines, then appends a line to ``progress.log`` and sleeps; the test polls
that log and signals once the line is there, so the printed lines are in the output pipe by then
(the session log gets them only with the call's result)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dsh.agent.stop_signals import cancelled_by
from dsh.cli.standard_streams import CANCELLED_OUTPUT_CLOSED
from dsh.events import TextBlock, ToolResultEvent, TurnEndEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.conftest import DSH
from tests.cli.test_interrupted_cli import signalled, wait_for
from tests.helpers import run_session_id
from tests.tools.test_shell import gone_soon, read_pid

COMMAND = (
    "for i in 1 2 3; do echo line $i; done; sleep 60 & echo $! > sleeper.pid; "
    "echo printed >> progress.log; wait"
)


def wait_for_line(log: Path, line: str, child: subprocess.Popen[str]) -> None:
    """Poll ``log`` until it holds ``line`` (the deadline only stops a broken test hanging)."""
    deadline = time.monotonic() + 120
    while not (log.exists() and line in log.read_text().splitlines()):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, f"{line!r} never appeared in {log}"
        time.sleep(0.05)


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda signum: signum.name
)
def test_a_signal_during_a_command_keeps_its_output_and_logs_what_stopped_the_turn(
    tmp_path: Path, env: dict[str, str], signum: signal.Signals
):
    script = tmp_path / "s.json"
    call = {"name": "bash", "arguments": {"command": COMMAND}}
    script.write_text(json.dumps([{"toolCalls": [call]}]))
    status, _, err = signalled(
        ["run", "--yes", "--script", str(script), "run the build"],
        env=env,
        cwd=tmp_path,
        ready=lambda child: wait_for_line(tmp_path / "progress.log", "printed", child),
        signum=signum,
    )

    assert status == 128 + signum, err
    assert "Traceback" not in err
    assert gone_soon(read_pid(tmp_path / "sleeper.pid"))
    session_id = run_session_id(err)
    events = Session.open(JsonlStore(Path(env["DSH_HOME"])), session_id).events
    (answer,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert answer.data.error is not None and answer.data.error.code == "CANCELLED"
    text = answer.data.message.content[0].content[0]  # type: ignore[union-attr]
    assert isinstance(text, TextBlock)
    reason = cancelled_by(signum)
    assert text.text == (
        f"[CANCELLED] this tool call was {reason} and stopped before it finished; its output "
        "until then:\nline 1\nline 2\nline 3\n[cut short by the cancel]"
    )
    (end,) = [e for e in events if isinstance(e, TurnEndEvent)]
    assert end.data.reason.kind == "aborted" and end.data.reason.error == reason
    assert (reason == "cancelled by the user") == (signum == signal.SIGINT)


def test_a_closed_output_during_a_command_logs_that_the_output_closed_not_the_user(
    tmp_path: Path, env: dict[str, str]
):
    """``dsh run --json … | head -1``: the reader goes away while the first of two ``bash``
    calls runs; the next event dsh writes finds the pipe closed, which cancels the turn. The
    second call's result and the turn's end say the output was closed: nobody pressed Ctrl-C."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    first = {"name": "bash", "arguments": {"command": "touch started; cat gate; echo one"}}
    second = {"name": "bash", "arguments": {"command": "echo two"}}
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"toolCalls": [first, second]}, {"text": "never sent"}]))
    child = subprocess.Popen(
        [DSH, "run", "--json", "--yes", "--script", str(script), "run both"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stderr is not None
        session_id = json.loads(child.stdout.readline())["session"]  # like `| head -1`
        wait_for(tmp_path / "started", child)  # the first call is running
        child.stdout.close()  # the reader goes away
        with gate.open("w"):  # the first call's `cat` ends: its result is the next event
            pass
        status = child.wait(timeout=120)
        err = child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()

    assert (status, err) == (141, "")
    events = Session.open(JsonlStore(Path(env["DSH_HOME"])), session_id).events
    done, cancelled = [e for e in events if isinstance(e, ToolResultEvent)]
    assert done.data.error is None
    assert cancelled.data.error is not None and cancelled.data.error.code == "CANCELLED"
    text = cancelled.data.message.content[0].content[0]  # type: ignore[union-attr]
    assert isinstance(text, TextBlock)
    assert text.text.startswith(f"[CANCELLED] this tool call was {CANCELLED_OUTPUT_CLOSED}")
    (end,) = [e for e in events if isinstance(e, TurnEndEvent)]
    assert end.data.reason.kind == "aborted" and end.data.reason.error == CANCELLED_OUTPUT_CLOSED
