"""``dsh run`` shows what a model had streamed when its turn failed part-way or a signal
stopped it: plain output prints the cut reply before the error line, ``--json-stream``'s
``turn_end`` carries it with ``partial: true``, ``--json`` has it in the logged reply.

Real ``dsh run`` processes talk to a real HTTP server on 127.0.0.1 that streams part of a reply
and then drops the connection, goes silent, or sends an error inside the stream (an audit with a
llama.cpp server saw only the error line, the streamed words printed nowhere but in the log)."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import DSH
from tests.cli.test_run_waiting import NOTICE, _read_rest, _read_until
from tests.helpers import run_session_id
from tests.llm.fake_server import Canned, FakeServer, oa_chunk, oa_tool_call, openai_stream

PARTIAL = "The failing test expects 42, but"
ERASE = b"\x1b[K"
"""What the waiting notice is written and erased with on a terminal (``dsh.cli.live``)."""
OVERFLOW = "the request exceeds the available context size, try increasing it"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No developer ``DSH_*`` setting or proxy: the process talks to the server directly."""
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith("DSH_") and "proxy" not in k.lower()
    }
    environ["DSH_HOME"] = str(tmp_path / "home")
    return environ


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def route(server: FakeServer) -> list[str]:
    return ["--base-url", server.url + "/v1", "--model", "m", "--context-window", "8192"]


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def dropped(*chunks: dict[str, Any]) -> Canned:
    """A reply whose server dies after streaming ``chunks`` (the connection closes mid-body)."""
    stream = openai_stream(*chunks)
    return Canned(stream.status, stream.headers, stream.parts, chunked=True, drop_after=len(chunks))


def partial_text() -> tuple[dict[str, Any], ...]:
    """``PARTIAL`` in two chunks, as a model streams it."""
    middle = PARTIAL.index(" but")
    return oa_chunk(content=PARTIAL[:middle]), oa_chunk(content=PARTIAL[middle:])


def stream_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def deltas(lines: list[dict[str, Any]]) -> str:
    """The text of the stream's ``text_delta`` lines, joined."""
    return "".join(line["text"] for line in lines if line["type"] == "text_delta")


def queue_failure(server: FakeServer, how: str, held: threading.Event) -> None:
    """A reply that streams ``PARTIAL`` then fails ``how``."""
    if how == "server died":
        server.queue(dropped(*partial_text()))
    elif how == "idle timeout":  # the rest never comes: the stream is silent past the timeout
        stream = openai_stream(*partial_text(), oa_chunk(finish="stop"))
        server.queue(Canned(stream.status, stream.headers, stream.parts, hold=held, hold_before=2))
    else:  # a context overflow the server reports inside the stream
        error = {"error": {"message": OVERFLOW, "type": "exceed_context_size_error", "code": 400}}
        server.queue(openai_stream(*partial_text(), error, done=False))


@pytest.mark.parametrize(
    ("how", "code"),
    [
        ("server died", "CONNECTION"),
        ("idle timeout", "TIMEOUT"),
        ("overflow", "CONTEXT_WINDOW_EXCEEDED"),
    ],
)
def test_plain_output_prints_the_streamed_text_of_a_turn_that_failed_before_its_error_line(
    tmp_path: Path, env: dict[str, str], server: FakeServer, how: str, code: str
) -> None:
    held = threading.Event()
    queue_failure(server, how, held)
    env["DSH_PROVIDER_STREAM_IDLE_TIMEOUT"] = "1"  # only the silent server reaches it
    try:
        done = dsh("run", *route(server), "why does the test fail?", env=env, cwd=tmp_path)
    finally:
        held.set()
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [PARTIAL] and run_session_id(done.stderr)
    assert done.stdout.startswith(PARTIAL + "\n")
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("dsh: error: ")]
    assert error.startswith(f"dsh: error: turn 1 failed: {code}")
    assert len(server.requests) == 1  # what streamed is not asked for again


def test_json_stream_ends_a_failed_turn_with_its_streamed_text_marked_partial(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    server.queue(dropped(*partial_text()))
    done = dsh("run", "--json-stream", *route(server), "why?", env=env, cwd=tmp_path)

    assert done.returncode == 1
    lines = stream_lines(done.stdout)
    assert deltas(lines) == PARTIAL  # no delta lost
    (reply,) = [line for line in lines if line["type"] == "reply"]
    assert (reply["interrupted"], reply["errorCode"]) == (True, "CONNECTION")
    end = lines[-1]
    assert end["type"] == "turn_end" and end["reason"] == "error"
    assert end["error"].startswith("CONNECTION")
    assert (end["text"], end["partial"]) == (PARTIAL, True)
    (error,) = [line for line in lines if line["type"] == "error"]
    assert error["message"].startswith("turn 1 failed: CONNECTION")


def test_json_stream_turn_end_of_a_completed_turn_is_not_partial(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    rest = oa_chunk(content=" 41 is returned.")
    server.queue(openai_stream(*partial_text(), rest, oa_chunk(finish="stop")))
    done = dsh("run", "--json-stream", *route(server), "why?", env=env, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    end = stream_lines(done.stdout)[-1]
    assert end["type"] == "turn_end" and end["reason"] == "completed"
    assert (end["text"], end["partial"]) == (PARTIAL + " 41 is returned.", False)


def test_json_output_holds_the_streamed_text_in_the_reply_marked_interrupted(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    """``--json`` is the log's events: the cut reply is its ``assistant/message`` (marked
    ``interrupted``, with the failure's ``errorCode``) and the turn ends ``error``."""
    server.queue(dropped(*partial_text()))
    done = dsh("run", "--json", *route(server), "why?", env=env, cwd=tmp_path)

    assert done.returncode == 1
    events = stream_lines(done.stdout)
    (reply,) = [e["data"] for e in events if e["type"] == "assistant/message"]
    assert reply["message"]["content"] == [{"type": "text", "text": PARTIAL}]
    assert (reply["interrupted"], reply["errorCode"]) == (True, "CONNECTION")
    assert events[-1]["type"] == "turn/end"
    assert events[-1]["data"]["reason"]["kind"] == "error"
    assert "turn 1 failed: CONNECTION" in done.stderr


def test_a_cut_reply_prints_its_text_and_no_tool_call_is_shown_or_run(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    """The server dies with one call complete and the next one's arguments half streamed: the
    plain answer is the reply's text only; ``--json-stream`` shows the complete call answered
    ``NOT_RUN`` and nothing of the half one; neither runs."""
    touch = json.dumps({"command": "touch ran.txt"})
    calls = (
        oa_chunk(tool_calls=[oa_tool_call(0, id="c1", name="bash", arguments=touch)]),
        oa_chunk(tool_calls=[oa_tool_call(1, id="c2", name="bash", arguments='{"comma')]),
    )
    server.queue(dropped(*partial_text(), *calls), dropped(*partial_text(), *calls))
    plain = dsh("run", "--yes", *route(server), "fix it", env=env, cwd=tmp_path)
    streamed = dsh("run", "--yes", "--json-stream", *route(server), "fix it", env=env, cwd=tmp_path)

    assert (plain.returncode, streamed.returncode) == (1, 1)
    assert plain.stdout.splitlines() == [PARTIAL]
    assert "bash" not in plain.stdout and "touch" not in plain.stdout + plain.stderr
    lines = stream_lines(streamed.stdout)
    shown = [(line["type"], line.get("callId")) for line in lines if "callId" in line]
    assert shown == [("tool_call", "c1"), ("tool_result", "c1")]
    (result,) = [line for line in lines if line["type"] == "tool_result"]
    assert (result["status"], result["code"]) == ("error", "NOT_RUN")
    assert (lines[-1]["text"], lines[-1]["partial"]) == (PARTIAL, True)
    assert not (tmp_path / "ran.txt").exists()


def held_partial(server: FakeServer) -> tuple[threading.Event, threading.Event]:
    """Queue a reply that waits for the first event before it starts, streams ``PARTIAL``,
    then waits for the second event before the rest; returns both."""
    start, rest = threading.Event(), threading.Event()
    stream = openai_stream(*partial_text(), oa_chunk(content=" more"), oa_chunk(finish="stop"))
    server.queue(Canned(stream.status, stream.headers, stream.parts, holds=((0, start), (2, rest))))
    return start, rest


def test_sigterm_mid_stream_prints_the_text_streamed_so_far_to_a_pipe(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    """stdout a pipe (only each turn's answer is printed), stderr a terminal: the waiting
    notice shows while the server holds its first chunk, and is erased when the text arrives,
    so SIGTERM is sent once the partial text has reached dsh."""
    start, rest = held_partial(server)
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [DSH, "run", *route(server), "why?", "and then?"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    os.close(slave)
    try:
        seen = _read_until(master, NOTICE + b"1 s)")
        start.set()
        while seen.count(ERASE) <= seen.count(NOTICE):  # each notice comes with its own erase
            seen += _read_until(master, ERASE)
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=60)
        err = (seen + _read_rest(master)).decode()
    finally:
        start.set()
        rest.set()
        if child.poll() is None:
            child.kill()
        os.close(master)
    assert child.returncode == 128 + signal.SIGTERM, err
    assert out.splitlines() == [PARTIAL] and run_session_id(err)
    assert "stopped by SIGTERM" in err
    assert len(server.requests) == 1  # the second prompt never ran


def test_sigterm_mid_stream_ends_the_json_stream_with_the_text_streamed_so_far(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    start, rest = held_partial(server)
    start.set()
    child = subprocess.Popen(
        [DSH, "run", "--json-stream", *route(server), "why?"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None
    try:
        lines = []
        while deltas(lines) != PARTIAL:
            lines.append(json.loads(child.stdout.readline()))
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    finally:
        rest.set()
        if child.poll() is None:
            child.kill()
    assert child.returncode == 128 + signal.SIGTERM, err
    lines += stream_lines(out)
    assert deltas(lines) == PARTIAL
    (end,) = [line for line in lines if line["type"] == "turn_end"]
    assert end["reason"] == "aborted" and "SIGTERM" in end["error"]
    assert (end["text"], end["partial"]) == (PARTIAL, True)
    assert lines[-1]["type"] == "warning" and "stopped by SIGTERM" in lines[-1]["message"]
