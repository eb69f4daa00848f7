"""``dsh run --json-stream``: a turn followed live, one versioned JSON line per thing that
happens (docs/usage.md, "Following a turn live"). The real console script as a subprocess,
with the keyless scripted provider (and, for a stream of many deltas, a real HTTP server on
127.0.0.1 speaking OpenAI's SSE); each line is parsed as a script would."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from dsh.cli.standard_streams import CANCELLED_OUTPUT_CLOSED
from dsh.events import PluginSource, TurnEndEvent, UserMessageEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.conftest import DSH
from tests.cli.test_interrupted_cli import wait_for
from tests.llm.fake_server import FakeServer, oa_chunk, oa_usage, openai_stream

KEY = "sk-stream-test-0123456789abcdef"


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def script(tmp_path: Path, entries: list[dict[str, Any]]) -> str:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(entries))
    return str(path)


def lines(stdout: str) -> list[dict[str, Any]]:
    """Every line of the stream, parsed: each one must be a JSON object of schema 1 with a
    type and the session id of the first line."""
    parsed = [json.loads(line) for line in stdout.splitlines()]
    assert parsed and parsed[0]["type"] == "session"
    for line in parsed:
        assert line["v"] == 1 and isinstance(line["type"], str)
        assert line["session"] == parsed[0]["session"]
    return parsed


def test_each_line_is_a_versioned_json_object_in_the_order_the_turn_ran(
    tmp_path: Path, env: dict[str, str]
) -> None:
    (tmp_path / "notes.txt").write_text("the build is green\n")
    look = {"name": "read_file", "arguments": {"path": "notes.txt"}}
    build = {"name": "bash", "arguments": {"command": "make"}}
    entries = [{"text": "Let me look.", "toolCalls": [look, build]}, {"text": "It is green."}]
    done = dsh("run", "--json-stream", "--script", script(tmp_path, entries), "is it green?",
               env=env, cwd=tmp_path)  # fmt: skip

    assert done.returncode == 0, done.stderr
    stream = lines(done.stdout)  # nothing else on stdout: no "session:" line
    assert [(line["type"], line.get("name")) for line in stream] == [
        ("session", None),
        ("turn_start", None),
        ("text_delta", None),
        ("reply", None),
        ("tool_call", "read_file"),
        ("tool_call", "bash"),
        ("tool_result", "read_file"),
        ("approval_refused", "bash"),  # a headless run asks no one
        ("tool_result", "bash"),
        ("text_delta", None),
        ("reply", None),
        ("turn_end", None),
    ]
    session, start, _, first, read, _, read_result, refused, denied, _, last, end = stream
    assert session["resumed"] is False
    assert start["turn"] == 1 and start["prompt"] == "is it green?"
    assert (first["step"], first["text"], first["toolCalls"]) == (1, "Let me look.", 2)
    assert json.loads(read["arguments"]) == {"path": "notes.txt"}
    assert read_result["status"] == "ok" and read_result["code"] is None
    assert read_result["preview"] == "1\tthe build is green" and read_result["chars"] == 20
    assert read_result["callId"] == read["callId"]
    assert "--allow bash" in refused["message"]
    assert (denied["status"], denied["code"]) == ("error", "DENIED")
    assert (last["step"], last["text"]) == (2, "It is green.")
    assert end["reason"] == "completed" and end["error"] is None
    assert end["text"] == "It is green."
    assert end["usage"]["calls"] == 2 and end["usage"]["outputTokens"] > 0
    assert (
        end["usage"]["inputTokens"] == first["usage"]["inputTokens"] + last["usage"]["inputTokens"]
    )
    assert isinstance(end["costUsd"], float) and end["unpriced"] == []  # priced as DeepSeek


def test_the_deltas_of_a_real_stream_join_into_each_reply_and_the_final_answer(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A server that streams its answer a few characters a chunk, as real ones do: the
    ``text_delta`` lines, joined, are the reply's text, which is the turn's final answer."""
    answer = "".join(f"word{i} " for i in range(400)) + "— done ✓"
    pieces = [answer[i : i + 3] for i in range(0, len(answer), 3)]
    local = {
        k: v for k, v in env.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    local["DSH_COMPACTION_SUMMARIZER"] = "extractive"
    with FakeServer() as server:
        server.queue(
            openai_stream(
                *[oa_chunk(content=piece) for piece in pieces],
                oa_chunk(finish="stop"),
                oa_chunk(no_choices=True, usage=oa_usage(100, 400)),
            )
        )
        done = dsh("run", "--json-stream", "--base-url", server.url + "/v1", "--model", "m",
                   "--context-window", "32000", "say it", env=local, cwd=tmp_path)  # fmt: skip

    assert done.returncode == 0, done.stderr
    stream = lines(done.stdout)
    deltas = [line for line in stream if line["type"] == "text_delta"]
    (reply,) = [line for line in stream if line["type"] == "reply"]
    assert "".join(delta["text"] for delta in deltas) == reply["text"] == answer
    assert all((delta["turn"], delta["step"]) == (1, 1) for delta in deltas)
    kinds = [line["type"] for line in stream]
    assert kinds.index("reply") > max(i for i, kind in enumerate(kinds) if kind == "text_delta")
    assert stream[-1]["type"] == "turn_end" and stream[-1]["text"] == answer


def test_a_key_in_a_calls_arguments_is_masked_as_the_tools_mask_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A key the person gave the model, put in a ``bash`` command: the stream shows the call's
    arguments masked as the tools mask a command's output (and the ``!cmd`` line)."""
    call = {"name": "bash", "arguments": {"command": f"curl -H 'Authorization: {KEY}' x"}}
    entries = [{"toolCalls": [call]}, {"text": "done"}]
    local = {**env, "DEEPSEEK_API_KEY": KEY}
    done = dsh("run", "--json-stream", "--script", script(tmp_path, entries), "fetch x",
               env=local, cwd=tmp_path)  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout
    (shown,) = [line for line in lines(done.stdout) if line["type"] == "tool_call"]
    assert json.loads(shown["arguments"]) == {
        "command": "curl -H 'Authorization: [masked DEEPSEEK_API_KEY]' x"
    }


def test_warnings_and_a_compaction_pass_are_lines_of_the_stream(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Each warning printed on stderr is a ``warning`` line too, dsh's logged ones (an
    untrusted project config's) and the command's own alike; those of the run's start follow
    the ``session`` line. A pass that compacts before a turn is a ``compaction_start`` /
    ``compaction_end`` pair with its figures, before the turn's first reply."""
    commands = tmp_path / ".dsh" / "commands"
    commands.mkdir(parents=True)
    (commands / "compact.md").write_text("a command named as a built-in\n")
    (tmp_path / ".dsh" / "config.toml").write_text('[tools]\napproval = "auto"\n')
    answers = [{"text": f"answer {i} " + "y" * 1500} for i in range(7)] + [{"text": ""}]
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("\n".join(f"q{i} " + "z" * 1500 for i in range(8)))
    done = dsh("run", "--json-stream", "--compaction", "basic", "--context-window", "8000",
               "--script", script(tmp_path, answers), "--prompts-file", str(prompts),
               env=env, cwd=tmp_path)  # fmt: skip

    assert done.returncode == 0, done.stderr
    stream = lines(done.stdout)
    warnings = [line["message"] for line in stream if line["type"] == "warning"]
    printed = [line.removeprefix("dsh: warning: ") for line in done.stderr.splitlines()]
    assert warnings == printed and len(warnings) == 3
    assert [line["type"] for line in stream[1:3]] == ["warning", "warning"]
    assert 'config.toml: ignored tools.approval = "auto"' in stream[1]["message"]
    assert "compact.md skipped" in stream[2]["message"]
    assert (stream[-2]["type"], stream[-2]["message"]) == (
        "warning", "turn 8 ended without an answer: the model's last reply was empty")  # fmt: skip
    assert [line["turn"] for line in stream if line["type"] == "turn_end"] == list(range(1, 9))
    started = [i for i, line in enumerate(stream) if line["type"] == "compaction_start"]
    assert started, "no pass ran"
    for i in started:
        start, end = stream[i], stream[i + 1]
        assert end["type"] == "compaction_end" and end["passId"] == start["passId"]
        assert end["error"] is None and end["checkpoints"] >= 1
        assert end["contextTokensBefore"] == start["contextTokens"] > end["contextTokens"]
        assert end["summarizedTokens"] > 0
        assert stream[i - 1]["type"] == "turn_start"  # before the turn's first step:
        assert stream[i + 2]["type"] in ("text_delta", "reply")  # its reply comes next


def test_a_closed_pipe_cancels_the_turn_at_once_and_exits_quietly(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """``dsh run --json-stream … | head -1``: the reader goes away while a ``bash`` call runs
    (one that would wait for ever); dsh sees it go without a line to write, which cancels the
    turn; dsh exits 141 and says nothing, and the turn's end says the output was closed."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    first = {"name": "bash", "arguments": {"command": "touch started; cat gate; echo one"}}
    second = {"name": "bash", "arguments": {"command": "echo two"}}
    entries = [{"toolCalls": [first, second]}, {"text": "never sent"}]
    child = subprocess.Popen(
        [DSH, "run", "--json-stream", "--yes", "--script", script(tmp_path, entries), "run both"],
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
        status = child.wait(timeout=120)
        err = child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        with contextlib.suppress(OSError):  # a `cat` left waiting (the check failed) ends
            os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))

    assert (status, err) == (141, "")
    events = Session.open(JsonlStore(Path(env["DSH_HOME"])), session_id).events
    (end,) = [e for e in events if isinstance(e, TurnEndEvent)]
    assert end.data.reason.kind == "aborted" and end.data.reason.error == CANCELLED_OUTPUT_CLOSED


def test_json_and_json_stream_are_refused_together(tmp_path: Path, env: dict[str, str]) -> None:
    done = dsh("run", "--json", "--json-stream", "--script", script(tmp_path, [{"text": "x"}]),
               "hi", env=env, cwd=tmp_path)  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "dsh: error: --json and --json-stream cannot be combined: choose one\n"


def test_a_text_call_after_the_last_step_max_steps_allows_is_said_and_no_note_is_logged(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A reply whose read-only call (written as text) ran, with a write written as text beside
    it, on the last step ``--max-steps`` allows: the turn ends there. The note that would tell
    the model its write was not run is not logged, since no model call follows to read it; the
    stream (and stderr) say the call was not run and that ``max_steps`` stopped the turn."""
    read = json.dumps({"name": "read_file", "arguments": {"path": "app.py"}})
    edit = json.dumps(
        {"name": "edit_file", "arguments": {"path": "app.py", "old": "a", "new": "b"}}
    )
    reply = f"Reading.\n<tools>{read}</tools>\n<tools>{edit}</tools>\nFixed."
    (tmp_path / "app.py").write_text("a\n")
    local = {**env, "DSH_PROVIDER_TEXT_TOOL_CALLS": "true"}
    done = dsh("run", "--json-stream", "--max-steps", "1", "--script",
               script(tmp_path, [{"text": reply}, {"text": "never"}]), "fix app.py",
               env=local, cwd=tmp_path)  # fmt: skip

    assert done.returncode == 3, done.stderr  # stopped at a limit
    stream = lines(done.stdout)
    said = [line["message"] for line in stream if line["type"] == "warning"]
    assert said == [
        "turn 1: 1 tool call written in the reply's text was not run (edit_file): the model "
        "wrote it as text instead of calling the tool",
        "turn 1 stopped: stopped after 1 steps (max_steps)",
    ]
    end = stream[-1]
    assert (end["type"], end["reason"]) == ("turn_end", "max-steps")
    events = Session.open(JsonlStore(Path(env["DSH_HOME"])), stream[0]["session"]).events
    notes = [
        e for e in events if isinstance(e, UserMessageEvent)
        and isinstance(e.data.source, PluginSource)
    ]  # fmt: skip
    assert notes == []
    assert (tmp_path / "app.py").read_text() == "a\n"
