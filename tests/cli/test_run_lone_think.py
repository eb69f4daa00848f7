"""``dsh run`` with a model whose template opened ``<think>`` in the prompt, so it writes its
reasoning as plain text closed by a lone ``</think>`` (DeepSeek-R1 distills, QwQ, Qwen3 on
llama.cpp without a reasoning parser): what it prints and streams cannot be taken back, so
reasoning must not reach it as answer text (``dsh.cli.held_text``).

The first such reply of an endpoint dsh has not met finds its reasoning already streamed: the
stream says so (a ``text_was_reasoning`` line; on a terminal, a line on stderr) and the endpoint
is remembered. From then on (later calls of the run, later runs) the text that may be reasoning
is held back until the ``</think>`` decides it, and only the answer is streamed. A model that
does not write the tag streams its text at once.

Real ``dsh run`` processes talk to a real HTTP server on 127.0.0.1 streaming SSE chat
completions; the terminal is a real pty."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import threading
from pathlib import Path
from typing import Any

from dsh.cli.held_text import MEMORY_FILE, endpoint_key
from tests.cli.conftest import DSH
from tests.cli.test_run_partial_answer import deltas, dsh, env, route, server, stream_lines
from tests.cli.test_run_waiting import _read_rest
from tests.llm.fake_server import Canned, FakeServer, oa_chunk, oa_tool_call, openai_stream

__all__ = ["env", "server"]  # the fixtures, used by name

REASONING = "Okay, the user wants the sum.\n2 and 2 make 4.\n"
ANSWER = "The answer is 4."
REPLY = REASONING + "</think>\n\n" + ANSWER


def _pieces(text: str, size: int = 5) -> list[dict[str, Any]]:
    return [oa_chunk(content=text[i : i + size]) for i in range(0, len(text), size)]


def thinking(text: str = REPLY) -> Canned:
    """A reply streamed in small pieces, reasoning closed by a lone ``</think>``."""
    return openai_stream(*_pieces(text), oa_chunk(finish="stop"))


def test_json_stream_says_streamed_reasoning_was_reasoning_then_holds_it_back_next_run(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    server.queue(thinking(), thinking())
    first = dsh("run", "--json-stream", *route(server), "2+2?", env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    lines = stream_lines(first.stdout)
    kinds = [line["type"] for line in lines]
    assert "text_was_reasoning" in kinds  # the reasoning had streamed as text: it says so
    cut = kinds.index("text_was_reasoning")
    assert deltas(lines[:cut]) == REASONING
    assert (lines[cut]["turn"], lines[cut]["step"]) == (1, 1)
    assert deltas(lines[cut:]) == ANSWER
    (reply,) = [line for line in lines if line["type"] == "reply"]
    assert reply["text"] == ANSWER and lines[-1]["text"] == ANSWER
    assert (Path(env["DSH_HOME"]) / "cache" / MEMORY_FILE).is_file()

    second = dsh("run", "--json-stream", *route(server), "2+2?", env=env, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    lines = stream_lines(second.stdout)
    assert deltas(lines) == ANSWER  # the endpoint is known: its reasoning never streams
    assert "text_was_reasoning" not in [line["type"] for line in lines]


def test_json_stream_holds_back_later_calls_of_the_run_that_learnt_it(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    """The first call's lone ``</think>`` teaches the run: its second call's reasoning (and the
    reasoning before a tool call) is never streamed."""
    call = oa_tool_call(0, id="c1", name="bash", arguments='{"command": "true"}')
    before_call = openai_stream(
        *_pieces("I should run true.\n</think>\n"),
        oa_chunk(tool_calls=[call]),
        oa_chunk(finish="tool_calls"),
    )
    server.queue(before_call, thinking("It ran.\n</think>\n\n" + ANSWER))
    done = dsh("run", "--yes", "--json-stream", *route(server), "go", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = stream_lines(done.stdout)
    assert [line["step"] for line in lines if line["type"] == "text_was_reasoning"] == [1]
    assert deltas([line for line in lines if line.get("step") == 2]) == ANSWER


def test_json_stream_of_a_known_endpoint_prints_a_reply_without_the_tag_whole(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    """An endpoint known to write the tag (remembered by its server and model), whose reply
    this time has none: its text is held until the reply ends, then streamed whole."""
    plain = "No reasoning this time.\nJust this."
    server.queue(thinking(), thinking(plain))
    assert dsh("run", "--json-stream", *route(server), "a", env=env, cwd=tmp_path).returncode == 0
    known = json.loads((Path(env["DSH_HOME"]) / "cache" / MEMORY_FILE).read_text())
    assert known == {"endpoints": [f"{server.url}/v1 m"]}
    done = dsh("run", "--json-stream", *route(server), "b", env=env, cwd=tmp_path)
    lines = stream_lines(done.stdout)
    assert deltas(lines) == plain == lines[-1]["text"]
    assert "text_was_reasoning" not in [line["type"] for line in lines]


def _held_reply(server: FakeServer, before: str) -> threading.Event:
    """Queue a reply that streams ``before``, then waits for the event returned before it
    streams " there" and ends."""
    rest = threading.Event()
    stream = openai_stream(*_pieces(before), oa_chunk(content=" there"), oa_chunk(finish="stop"))
    waits_at = len(stream.parts) - 3  # " there", the finish and [DONE] wait
    server.queue(
        Canned(stream.status, stream.headers, stream.parts, hold=rest, hold_before=waits_at)
    )
    return rest


def _streamed(server: FakeServer, env: dict[str, str], cwd: Path, model: str, before: str) -> str:
    """One turn on ``model`` whose reply streams ``before`` and then waits: the server lets the
    rest go only once the stream's text ends with ``Hello``. All the text it streamed."""
    rest = _held_reply(server, before)
    args = ["--base-url", server.url + "/v1", "--model", model, "--context-window", "8192"]
    child = subprocess.Popen(
        [DSH, "run", "--json-stream", *args, "hi"],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None
    try:
        lines: list[dict[str, Any]] = []
        while not deltas(lines).endswith("Hello"):  # streamed while the server holds the rest
            line = child.stdout.readline()
            assert line, f"the stream ended before Hello: {deltas(lines)!r}"
            lines.append(json.loads(line))
        rest.set()
        out, err = child.communicate(timeout=60)
    finally:
        rest.set()
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    return deltas(lines + stream_lines(out))


def test_the_answer_streams_as_it_comes_and_a_model_not_known_streams_at_once(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    """Holding waits for the tag, not for the reply's end: a known endpoint's answer streams
    while the server still holds the rest of it (its reasoning never). Another model (no tag
    seen from it) streams its text at once, as ever: the common case stays prompt."""
    server.queue(thinking())
    assert dsh("run", "--json-stream", *route(server), "a", env=env, cwd=tmp_path).returncode == 0
    answer = _streamed(server, env, tmp_path, "m", REASONING + "</think>\n\nHello")
    assert answer == "Hello there"
    assert _streamed(server, env, tmp_path, "plain", "Hello") == "Hello there"


def _on_a_terminal(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    """``dsh run ARGS`` with stdout a terminal (the answer streams there): its exit status, what
    the terminal showed (line ends as written) and stderr."""
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [DSH, "run", *args],
        env=env,
        cwd=cwd,
        stdout=slave,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    try:
        _, err = child.communicate(timeout=120)
        shown = _read_rest(master)
    finally:
        if child.poll() is None:
            child.kill()
        os.close(master)
    return child.returncode, shown.decode().replace("\r\n", "\n"), err.decode()


def test_a_terminal_is_told_of_streamed_reasoning_then_shows_only_the_answer_next_run(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    server.queue(thinking(), thinking())
    status, shown, err = _on_a_terminal(env, tmp_path, *route(server), "2+2?")
    assert status == 0, err
    assert shown == REASONING + ANSWER + "\n"  # printed before the tag came
    assert "the text above was the model's reasoning" in err

    status, shown, err = _on_a_terminal(env, tmp_path, *route(server), "2+2?")
    assert status == 0, err
    assert shown == ANSWER + "\n"  # held back: the reasoning never reaches stdout
    assert "reasoning" not in err


def test_a_run_printing_to_a_pipe_learns_the_model_too(
    tmp_path: Path, env: dict[str, str], server: FakeServer
) -> None:
    """stdout a pipe prints the logged answer only; the lone tag it met is remembered, so a
    later run on a terminal holds that model's reasoning back."""
    server.queue(thinking(), thinking())
    piped = dsh("run", *route(server), "2+2?", env=env, cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == ANSWER + "\n" and "reasoning" not in piped.stderr
    status, shown, err = _on_a_terminal(env, tmp_path, *route(server), "2+2?")
    assert status == 0, err
    assert shown == ANSWER + "\n"


def test_an_endpoint_is_remembered_without_the_credentials_its_url_carries() -> None:
    url = "http://user:secret@127.0.0.1:8080/v1?api_key=k3y&x=1"
    assert (
        endpoint_key("openai-compatible", url, "m") == "http://127.0.0.1:8080/v1?api_key=***&x=1 m"
    )
    assert endpoint_key("deepseek", None, "r1") == "deepseek r1"
