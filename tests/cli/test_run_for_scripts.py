"""``dsh run`` as a script uses it: prompts piped on stdin, the answer alone on stdout with the
session id on stderr from the start, and an exit status that tells a limit (3) and a reply cut at
the output limit (4) from a completed turn and from a cancel.

Real ``dsh run`` processes; a real HTTP server on 127.0.0.1 stands in for a provider where one
is needed (an audit found each of these: ``echo q | dsh run`` refused, ``session: ID`` only at
the end and on stdout, ``--max-steps`` reported as a cancel, a cut answer exiting 0)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import DSH
from tests.helpers import run_session_id
from tests.llm.fake_server import Canned, FakeServer, oa_chunk, openai_stream


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No developer ``DSH_*`` setting, key or proxy: a private home."""
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith("DSH_") and "proxy" not in k.lower()
    }
    for key in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        environ.pop(key, None)
    environ["DSH_HOME"] = str(tmp_path / "home")
    return environ


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def dsh(
    *args: str, env: dict[str, str], cwd: Path, stdin: Any = subprocess.DEVNULL, text_in: str = ""
) -> subprocess.CompletedProcess[str]:
    if text_in:
        return subprocess.run(
            [DSH, *args], env=env, cwd=cwd, input=text_in, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, stdin=stdin, capture_output=True, text=True, timeout=120
    )


def script(tmp_path: Path, entries: list[dict[str, Any]]) -> str:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(entries))
    return str(path)


def events(env: dict[str, str], cwd: Path, session_id: str) -> list[dict[str, Any]]:
    shown = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=cwd)
    return [json.loads(line) for line in shown.stdout.splitlines()]


def prompts_sent(env: dict[str, str], cwd: Path, session_id: str) -> list[str]:
    return [
        e["data"]["content"][0]["text"]
        for e in events(env, cwd, session_id)
        if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"
    ]


def turn_ends(env: dict[str, str], cwd: Path, session_id: str) -> list[dict[str, Any]]:
    return [e["data"]["reason"] for e in events(env, cwd, session_id) if e["type"] == "turn/end"]


# ---- prompts from stdin ---------------------------------------------------------------------


def test_a_prompt_piped_on_stdin_is_read_when_no_prompt_is_given(tmp_path, env):
    done = dsh(
        "run", "--script", script(tmp_path, [{"text": "fixed"}]), env=env, cwd=tmp_path,
        text_in="fix it\nplease\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "fixed\n"
    assert prompts_sent(env, tmp_path, run_session_id(done.stderr)) == ["fix it\nplease"]


def test_prompts_file_dash_reads_one_prompt_per_line_from_stdin(tmp_path, env):
    answers = script(tmp_path, [{"text": "one"}, {"text": "two"}])
    done = dsh(
        "run", "--script", answers, "--prompts-file", "-", env=env, cwd=tmp_path,
        text_in="first\n\nsecond\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "one\ntwo\n"
    assert prompts_sent(env, tmp_path, run_session_id(done.stderr)) == ["first", "second"]


def test_prompts_file_dev_null_is_an_empty_file(tmp_path, env):
    answers = script(tmp_path, [{"text": "ran"}])
    alone = dsh("run", "--script", answers, "--prompts-file", "/dev/null", env=env, cwd=tmp_path)
    assert alone.returncode == 2
    assert alone.stderr == (
        "dsh: error: --prompts-file /dev/null holds no prompt (blank lines are skipped)\n"
    )
    with_one = dsh(
        "run", "--script", answers, "--prompts-file", "/dev/null", "go", env=env, cwd=tmp_path
    )
    assert with_one.returncode == 0 and with_one.stdout == "ran\n", with_one.stderr


def test_no_prompt_and_a_terminal_on_stdin_is_refused_at_once(tmp_path, env):
    main, terminal = os.openpty()
    try:
        done = dsh(
            "run", "--script", script(tmp_path, [{"text": "never"}]), env=env, cwd=tmp_path,
            stdin=terminal,
        )  # fmt: skip
    finally:
        os.close(terminal)
        os.close(main)
    assert done.returncode == 2
    assert done.stderr == (
        "dsh: error: give at least one PROMPT, --prompts-file FILE, or a prompt on stdin "
        "(echo PROMPT | dsh run)\n"
    )


def test_stdin_is_read_once(tmp_path, env):
    answers = script(tmp_path, [{"text": "never"}])
    both = dsh("run", "--script", answers, "-", "--prompts-file", "-", env=env, cwd=tmp_path)
    assert both.returncode == 2 and "stdin is read once" in both.stderr
    empty = dsh("run", "--script", answers, env=env, cwd=tmp_path)  # stdin: /dev/null
    assert empty.returncode == 2 and "stdin was empty" in empty.stderr
    assert not (Path(env["DSH_HOME"]) / "sessions").exists()  # nothing was created


# ---- stdout the answer alone, the session id on stderr at once ----------------------------


def test_the_answer_alone_goes_to_stdout_and_the_session_id_to_stderr(tmp_path, env):
    done = dsh("run", "--script", script(tmp_path, [{"text": "42"}]), "q", env=env, cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout == "42\n"
    session_id = run_session_id(done.stderr)
    assert done.stderr == f"session: {session_id}\n"
    assert prompts_sent(env, tmp_path, session_id) == ["q"]


def test_a_run_killed_mid_turn_has_already_named_its_session(tmp_path, env, server):
    held = threading.Event()
    stream = openai_stream(oa_chunk(content="never seen"), oa_chunk(finish="stop"))
    server.queue(Canned(stream.status, stream.headers, stream.parts, hold=held))
    route = ["--base-url", server.url + "/v1", "--model", "m", "--context-window", "8192"]
    child = subprocess.Popen(
        [DSH, "run", *route, "a long job"],
        env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stderr is not None
        line = child.stderr.readline()  # the model's reply is held: only the id can come
        assert line.startswith("session: "), line
        wait_for(lambda: bool(server.requests))  # the turn's model call is under way
        child.kill()  # as an OOM kill would
        child.wait(timeout=60)
    finally:
        held.set()
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=60)
    session_id = line.strip().removeprefix("session: ")
    assert prompts_sent(env, tmp_path, session_id) == ["a long job"]


def wait_for(condition: Any) -> None:
    """Wait for ``condition()`` (a loaded machine may take long; no deadline is asserted on)."""
    done = threading.Event()
    for _ in range(2400):
        if condition():
            return
        done.wait(0.05)
    raise AssertionError("the condition never held")


# ---- exit statuses --------------------------------------------------------------------------


LIST_DIR = {"toolCalls": [{"name": "list_dir", "arguments": {}}]}
READ_A = {"toolCalls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}


def test_a_turn_stopped_by_max_steps_ends_max_steps_and_exits_3(tmp_path, env):
    answers = script(tmp_path, [LIST_DIR] * 4 + [{"text": "later"}])
    done = dsh(
        "run", "--script", answers, "--max-steps", "2", "first", "second", env=env, cwd=tmp_path
    )
    assert done.returncode == 3, done.stderr
    assert "dsh: warning: turn 1 stopped: stopped after 2 steps (max_steps)" in done.stderr
    session_id = run_session_id(done.stderr)
    assert turn_ends(env, tmp_path, session_id) == [
        {"kind": "max-steps", "error": "stopped after 2 steps (max_steps)"}
    ]  # the run stopped there: the second prompt never ran
    streamed = dsh(
        "run", "--script", answers, "--max-steps", "2", "--json-stream", "go", env=env,
        cwd=tmp_path,
    )  # fmt: skip
    end = json.loads(streamed.stdout.splitlines()[-1])
    assert streamed.returncode == 3
    assert (end["type"], end["reason"]) == ("turn_end", "max-steps")


def test_a_turn_stopped_for_repeated_calls_ends_repeated_calls_and_exits_3(tmp_path, env):
    (tmp_path / "a.txt").write_text("alpha\n")
    env["DSH_TOOLS_MAX_REPEATED_CALLS"] = "2"
    done = dsh("run", "--script", script(tmp_path, [READ_A] * 3), "read it", env=env, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    (reason,) = turn_ends(env, tmp_path, run_session_id(done.stderr))
    assert reason["kind"] == "repeated-calls" and "read_file" in reason["error"]


def test_a_reply_cut_at_the_output_limit_exits_4_after_the_later_prompts(tmp_path, env, server):
    server.queue(
        openai_stream(oa_chunk(content="The answer is"), oa_chunk(finish="length")),
        openai_stream(oa_chunk(content="Done."), oa_chunk(finish="stop")),
    )
    route = ["--base-url", server.url + "/v1", "--model", "m", "--context-window", "8192"]
    done = dsh("run", *route, "explain", "and then?", env=env, cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert done.stdout == "The answer is\nDone.\n"  # the next prompt still ran
    assert "turn 1 stopped: the model's reply was cut at its output limit" in done.stderr
    kinds = [r["kind"] for r in turn_ends(env, tmp_path, run_session_id(done.stderr))]
    assert kinds == ["max-tokens", "completed"]


def test_turn_end_counts_a_call_that_sent_no_usage_as_a_call(tmp_path, env, server):
    server.queue(openai_stream(oa_chunk(content="hi"), oa_chunk(finish="stop")))  # no usage
    route = ["--base-url", server.url + "/v1", "--model", "m", "--context-window", "8192"]
    done = dsh("run", *route, "--json-stream", "hello", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    end = json.loads(done.stdout.splitlines()[-1])
    assert end["type"] == "turn_end"
    assert (end["usage"]["calls"], end["usage"]["unreported"]) == (1, 1)
    assert end["usage"]["inputTokens"] == 0
