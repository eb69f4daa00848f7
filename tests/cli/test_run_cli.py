"""``dsh run``, ``dsh demo`` and ``dsh sessions stats`` as real processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_session_id

DSH = str(Path(sys.executable).with_name("dsh"))


@pytest.fixture
def env(tmp_path):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    for key in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        environ.pop(key, None)
    environ["DSH_HOME"] = str(tmp_path / "home")
    return environ


def dsh(*args: str, env, cwd, check=True):
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, check=check, timeout=60
    )


def write_script(path: Path, entries) -> Path:
    path.write_text(json.dumps(entries))
    return path


def test_a_session_continues_across_processes_with_session(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "first answer"}, {"text": "second"}])
    one = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    assert one.stdout.splitlines()[0] == "first answer"
    session_id = run_session_id(one.stderr)
    two = dsh(
        "run", "--script", str(script), "--session", session_id, "again", env=env, cwd=tmp_path
    )
    assert two.stdout.splitlines() == ["second"]  # the answer alone: the id is on stderr
    assert two.stderr == f"session: {session_id}\n"
    shown = dsh("sessions", "show", session_id, env=env, cwd=tmp_path).stdout
    assert shown.index("User: hello") < shown.index("first answer") < shown.index("User: again")
    events = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=tmp_path)
    types = [json.loads(line)["type"] for line in events.stdout.splitlines()]
    assert types.count("turn/start") == 2 and "session/end-seed" in types


def test_several_prompts_and_a_prompts_file_are_one_turn_each(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": f"a{i}"} for i in range(3)])
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("third\n\n")
    out = dsh(
        "run",
        "--script",
        str(script),
        "one",
        "two",
        "--prompts-file",
        str(prompts),
        env=env,
        cwd=tmp_path,
    ).stdout.splitlines()
    assert out[:3] == ["a0", "a1", "a2"]


def test_json_mode_prints_every_event_as_a_line(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    out = dsh("run", "--script", str(script), "--json", "hello", env=env, cwd=tmp_path).stdout
    first, *rest = (json.loads(line) for line in out.splitlines())
    types = [line["type"] for line in rest]
    # the settings the session runs with come first: they are an event of this run too
    assert types[:2] == ["session/settings", "turn/start"] and types[-1] == "turn/end"
    assert "assistant/message" in types
    assert first["type"] == "session" and set(first) == {"type", "session"}
    shown = dsh("sessions", "show", first["session"], "--view", "events", env=env, cwd=tmp_path)
    assert "hello" in shown.stdout  # the id names the session this run logged


def test_missing_api_key_names_the_variable_and_exits_2(tmp_path, env):
    result = dsh("run", "--provider", "deepseek", "hello", env=env, cwd=tmp_path, check=False)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "DEEPSEEK_API_KEY" in result.stderr
    assert "dsh demo" in result.stderr


def test_no_prompt_is_a_usage_error(tmp_path, env):
    result = subprocess.run(
        [DSH, "run", "--script", str(write_script(tmp_path / "s.json", []))],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,  # no prompt there either
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "PROMPT" in result.stderr


def test_a_failed_turn_exits_1_and_says_why(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"error": {"code": "AUTH", "message": "nope"}}])
    result = dsh("run", "--script", str(script), "hi", env=env, cwd=tmp_path, check=False)
    assert result.returncode == 1 and "AUTH" in result.stderr
    assert result.stderr.startswith("session: ")


def test_a_turn_that_ends_with_an_empty_reply_says_so(tmp_path, env):
    """A small model looping on a call can end its turn with an empty reply: ``dsh run`` printed
    nothing at all, and a person could not tell a finished turn from a lost answer."""
    script = write_script(tmp_path / "s.json", [{"text": ""}])
    result = dsh("run", "--script", str(script), "hi", env=env, cwd=tmp_path)
    assert "turn 1 ended without an answer" in result.stderr
    answered = dsh("run", "--script", str(write_script(tmp_path / "t.json", [{"text": "ok"}])),
                   "hi", env=env, cwd=tmp_path)  # fmt: skip
    assert "without an answer" not in answered.stderr


def test_headless_bash_is_denied_unless_allowed(tmp_path, env):
    entries = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo RAN > ran.txt"}}]},
        {"text": "done"},
    ]
    script = write_script(tmp_path / "s.json", entries)
    denied = dsh("run", "--script", str(script), "go", env=env, cwd=tmp_path)
    assert not (tmp_path / "ran.txt").exists()
    # stdout is a pipe here, yet stderr still says what was denied and how to allow it
    assert "dsh: bash was not run: denied by approval policy" in denied.stderr
    assert "--allow bash" in denied.stderr
    dsh("run", "--script", str(script), "--allow", "bash", "go", env=env, cwd=tmp_path)
    assert (tmp_path / "ran.txt").read_text() == "RAN\n"


def test_a_turn_cut_twice_at_the_output_limit_says_which_option_raises_it(tmp_path, env):
    call = {"name": "bash", "arguments": {"command": "echo RAN > ran.txt"}}
    cut = {"text": "Writing it.", "toolCalls": [call], "finish": "max-tokens"}
    script = write_script(tmp_path / "s.json", [cut, cut])
    result = dsh(
        "run", "--script", str(script), "--allow", "bash", "go", env=env, cwd=tmp_path, check=False
    )
    assert result.returncode == 4  # cut at the output limit
    assert not (tmp_path / "ran.txt").exists()
    (line,) = [x for x in result.stderr.splitlines() if "turn 1 stopped" in x]
    assert "twice in a row" in line and "provider.max_output_tokens" in line


def test_an_answer_cut_at_the_output_limit_is_printed_with_a_warning_naming_the_option(
    tmp_path, env
):
    cut = {"text": "The steps are: first, open the", "finish": "max-tokens"}
    script = write_script(tmp_path / "s.json", [cut])
    result = dsh("run", "--script", str(script), "--yes", "go", env=env, cwd=tmp_path, check=False)
    assert result.returncode == 4  # a $? check does not take it for a complete answer
    assert result.stdout.startswith(cut["text"])  # the cut answer is still printed
    (line,) = [x for x in result.stderr.splitlines() if "turn 1 stopped" in x]
    assert "cut at its output limit" in line and "may be incomplete" in line
    assert "provider.max_output_tokens" in line


def test_text_tool_calls_cut_twice_at_the_output_limit_run_nothing_and_name_the_option(
    tmp_path, env
):
    # As Qwen2.5-Coder 0.5B did on llama-server: text tool calls written until the limit cut
    # the last one, so the text is no call. The model is told its call was cut, and a second
    # such reply ends the turn.
    call = '{"name": "bash", "arguments": {"command": "echo RAN > ran.txt"}}'
    cut = {"text": f'{call}\n{call}\n{{"name": "ba', "finish": "max-tokens"}
    script = write_script(tmp_path / "s.json", [cut, cut])
    env = {**env, "DSH_PROVIDER_TEXT_TOOL_CALLS": "true"}
    result = dsh("run", "--script", str(script), "--yes", "go", env=env, cwd=tmp_path, check=False)
    assert result.returncode == 4
    assert not (tmp_path / "ran.txt").exists()
    assert result.stdout.startswith(call)  # the last reply is still printed
    (line,) = [x for x in result.stderr.splitlines() if "turn 1 stopped" in x]
    assert "twice in a row" in line and "provider.max_output_tokens" in line


def test_stats_reports_tokens_cache_ratio_steps_and_tool_calls(tmp_path, env):
    entries = [{"toolCalls": [{"name": "list_dir", "arguments": {}}]}, {"text": "done"}]
    script = write_script(tmp_path / "s.json", entries)
    ran = dsh("run", "--script", str(script), "go", env=env, cwd=tmp_path)
    session_id = run_session_id(ran.stderr)
    stats = dsh("sessions", "stats", session_id, env=env, cwd=tmp_path).stdout
    assert "steps              2" in stats
    assert "tool calls         1" in stats
    assert "cache-hit ratio" in stats and "%" in stats


def test_demo_runs_without_any_key_on_real_files(tmp_path, env):
    result = dsh("demo", env=env, cwd=tmp_path)
    assert "AssertionError: add(2, 3) returned -1" in result.stdout
    assert "all tests passed" in result.stdout
    assert "median ok" in result.stdout
    assert "session: " in result.stdout


def test_demo_shows_compaction_progress_the_marker_and_a_recall(tmp_path, env):
    out = dsh("demo", env=env, cwd=tmp_path).stdout
    lines = out.splitlines()
    progress = next(i for i, line in enumerate(lines) if "compacting · 1 of" in line)
    marker = next(i for i, line in enumerate(lines) if "earlier context was compacted" in line)
    read = next(i for i, line in enumerate(lines) if "recall: history_read" in line)
    assert progress < marker < read
    assert "line 3, in <module>" in "\n".join(lines[read:])  # the recalled traceback
    assert re.search(r"^compaction passes +1$", out, re.MULTILINE)  # index and state: one pass
    session_id = next(line for line in lines if line.startswith("session: ")).split()[1]
    transcript = dsh("sessions", "show", session_id, env=env, cwd=tmp_path).stdout
    assert "… earlier context was compacted …" in transcript
    assert "history_search" in transcript and "history_read" in transcript


def test_compact_command_compacts_an_idle_session_and_says_how_much(tmp_path, env):
    entries = [{"text": f"answer {i} " + "detail " * 200} for i in range(6)]
    script = write_script(tmp_path / "s.json", entries)
    prompts = [f"question {i} " + "context " * 200 for i in range(6)]
    ran = dsh(
        "run", "--script", str(script), "--context-window", "8000", *prompts, env=env, cwd=tmp_path
    )
    session_id = run_session_id(ran.stderr)
    result = dsh("compact", session_id, "--focus", "question 2", env=env, cwd=tmp_path)
    assert result.stdout.startswith("Compacted ") and "history items (~" in result.stdout
    again = dsh("compact", session_id, env=env, cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.startswith("Nothing to compact yet: all ")
    events = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=tmp_path)
    types = [json.loads(line)["type"] for line in events.stdout.splitlines()]
    # the second call had nothing to compact, so it logged nothing
    assert types.count("command/run") == 1 and types.count("command/done") == 1
    shown = dsh("sessions", "show", session_id, env=env, cwd=tmp_path).stdout
    assert "User: question 0" in shown and "… earlier context was compacted …" in shown


def test_compact_with_nothing_to_compact_appends_nothing(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "short answer"}])
    ran = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    session_id = run_session_id(ran.stderr)
    (log,) = (Path(env["DSH_HOME"]) / "sessions").glob(f"{session_id}/session.jsonl")
    before = log.read_bytes()
    for _ in range(2):
        result = dsh("compact", session_id, env=env, cwd=tmp_path)
        said = result.stdout.strip()
        assert said.startswith("Nothing to compact yet: all ") and said.count("\n") == 0
        assert "in the recent tail a pass keeps verbatim" in said
    assert log.read_bytes() == before


def test_compact_of_an_unknown_session_is_one_line_exit_1(tmp_path, env):
    result = dsh("compact", "nope", env=env, cwd=tmp_path, check=False)
    assert result.returncode == 1 and result.stderr.startswith("dsh: error: no session")


def test_compact_uses_the_budgets_of_the_sessions_own_model(tmp_path, env):
    entries = [{"text": f"answer {i} " + "detail " * 200} for i in range(6)]
    script = write_script(tmp_path / "s.json", entries)
    prompts = [f"question {i} " + "context " * 200 for i in range(6)]
    home = Path(env["DSH_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.toml"
    config.write_text('[compaction.overrides."scripted:scripted"]\nretain_tokens = 7000\n')
    ran = dsh(
        "run", "--script", str(script), "--context-window", "8000", *prompts, env=env, cwd=tmp_path
    )
    session_id = run_session_id(ran.stderr)
    config.unlink()  # the session recorded the budgets of its model; the config no longer matters
    # with the override the whole session fits in the retained tail: nothing to compact
    result = dsh("compact", session_id, env=env, cwd=tmp_path)
    said = result.stdout.strip()  # the figures are the session's own budgets and window
    assert said.startswith("Nothing to compact yet: all ")
    assert "(at least 7,000 tokens)" in said and "of the 8,000-token window" in said


def test_a_prompt_of_dash_is_read_from_stdin(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "read it"}])
    done = subprocess.run(
        [DSH, "run", "--script", str(script), "--json", "-"],
        input="a prompt\nover two lines\n",
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    events = [json.loads(line) for line in done.stdout.splitlines()[1:]]
    (user,) = [e for e in events if e["type"] == "user/message"]
    assert user["data"]["content"][0]["text"] == "a prompt\nover two lines"


def test_an_empty_stdin_prompt_is_a_usage_error(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "never"}])
    done = subprocess.run(
        [DSH, "run", "--script", str(script), "-"],
        input="",
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        done.returncode == 2
        and done.stderr == "dsh: error: the prompt '-' reads stdin, which was empty\n"
    )


def test_a_closed_stdout_ends_the_run_quietly_with_141_and_closes_the_session(tmp_path, env):
    # Each answer outgrows a pipe's buffer, so the run is still writing the first one when the
    # reader goes away, however fast the machine (short answers let it finish all five first).
    answer = "x" * 300_000
    script = write_script(tmp_path / "s.json", [{"text": f"{answer} {i}"} for i in range(5)])
    prompts = [f"prompt {i}" for i in range(5)]
    process = subprocess.Popen(
        [DSH, "run", "--script", str(script), "--json", *prompts],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    first = json.loads(process.stdout.readline())  # like `| head -1`
    process.stdout.close()
    assert process.wait(timeout=60) == 141
    assert process.stderr.read() == ""  # no per-event errors, no traceback
    session_id = first["session"]
    shown = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=tmp_path)
    assert "prompt 4" not in shown.stdout  # the later prompts never ran


def test_base_url_alone_reaches_an_openai_compatible_server_and_a_refused_one_is_an_error(
    tmp_path, env
):
    """No --provider and no key: --base-url means openai-compatible (no DEEPSEEK_API_KEY
    asked for); nothing listens on port 1, so the turn fails, reported as an error."""
    url = "http://127.0.0.1:1/v1"
    result = dsh("run", "--base-url", url, "--model", "m", "hi", env=env, cwd=tmp_path, check=False)
    assert result.returncode == 1
    assert "DEEPSEEK_API_KEY" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[-2] == (
        "dsh: error: turn 1 failed: CONNECTION: nothing listens at 127.0.0.1:1 (connection "
        "refused): is the server running?"
    )
    session_id = run_session_id(result.stderr)  # named as it started, then removed
    assert lines[-1] == (
        f"dsh: error: the provider was never reached; session {session_id} was not kept"
    )
    # The only warning: the server could not be reached to ask its context window.
    warnings = [line for line in lines if line.startswith("dsh: warning:")]
    assert warnings == [
        f"dsh: warning: {url} could not be reached (connection refused) to ask its context "
        "window; assuming 128,000 tokens (set provider.context_window or --context-window)"
    ]
    assert result.stdout == ""
    listed = dsh("sessions", "list", "--all", env=env, cwd=tmp_path)
    assert listed.stdout.strip() == "no sessions"  # no empty session left behind


def test_a_resumed_session_that_cannot_connect_is_kept(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "first answer"}])
    first = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    session_id = run_session_id(first.stderr)
    url = "http://127.0.0.1:1/v1"
    args = ["run", "--session", session_id, "--base-url", url, "--model", "m", "--context-window"]
    again = dsh(*args, "8000", "more", env=env, cwd=tmp_path, check=False)
    assert again.returncode == 1 and "was not kept" not in again.stderr
    shown = dsh("sessions", "show", session_id, env=env, cwd=tmp_path)
    assert "first answer" in shown.stdout


def test_a_configuration_error_leaves_no_session_and_no_lock_file(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "never"}])
    args = ["run", "--script", str(script), "--summarizer", "deepseek:deepseek-chat", "hi"]
    result = dsh(*args, env=env, cwd=tmp_path, check=False)
    assert result.returncode == 2 and "DEEPSEEK_API_KEY" in result.stderr
    home = Path(env["DSH_HOME"])
    assert not list(home.rglob("*.lock")) and not list(home.rglob("session.jsonl"))
    listed = dsh("sessions", "list", "--all", env=env, cwd=tmp_path)
    assert listed.stdout.strip() == "no sessions"


def test_replay_alone_serves_the_recorded_session_not_the_configured_provider(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "recorded answer"}])
    first = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    recorded = run_session_id(first.stderr)
    env["DEEPSEEK_API_KEY"] = "sk-not-a-real-key"  # the configured default must not be called
    env["DSH_PROVIDER_BASE_URL"] = "http://127.0.0.1:9/v1"  # and could not be reached

    replayed = dsh("run", "--replay", recorded, "hello", env=env, cwd=tmp_path, check=False)

    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.splitlines()[0] == "recorded answer"
    session_id = run_session_id(replayed.stderr)
    settings = dsh("sessions", "show", session_id, "--view", "settings", env=env, cwd=tmp_path)
    assert settings.stdout.splitlines()[0].split() == ["provider.name", "replay"]


def test_replay_with_another_provider_is_a_usage_error(tmp_path, env):
    done = dsh(
        "run", "--provider", "openai", "--replay", "x", "hi", env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 2
    assert done.stderr == (
        "dsh: error: --replay serves model calls with --provider replay, not openai\n"
    )


def test_continue_goes_on_with_the_session_used_last_in_this_workspace(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "one"}, {"text": "two"}, {"text": "3"}])
    first = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    first_id = run_session_id(first.stderr)
    dsh("run", "--script", str(script), "another session", env=env, cwd=tmp_path)
    # the first session is used again, so it is the one used last
    dsh("run", "--script", str(script), "--session", first_id, "again", env=env, cwd=tmp_path)
    went_on = dsh("run", "--script", str(script), "-c", "and again", env=env, cwd=tmp_path)
    assert run_session_id(went_on.stderr) == first_id
    shown = dsh("sessions", "show", first_id, env=env, cwd=tmp_path).stdout
    assert shown.index("User: again") < shown.index("User: and again")


def test_continue_is_refused_with_session_and_where_no_session_was_started(tmp_path, env):
    script = write_script(tmp_path / "s.json", [{"text": "one"}])
    both = dsh(
        "run",
        "--script",
        str(script),
        "-c",
        "--session",
        "x",
        "hi",
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert both.returncode == 2 and "--continue and --session" in both.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    none = dsh("run", "--script", str(script), "--continue", "hi", env=env, cwd=empty, check=False)
    assert none.returncode != 0
    assert none.stderr.strip() == (
        f"dsh: error: no session to continue in {empty.resolve()} (see `dsh sessions list --all`)"
    )


def test_a_new_session_whose_server_died_mid_reply_is_kept(tmp_path, env):
    """The server streams part of a reply, then its connection drops: the streamed words are
    logged, so the session is kept and named (it was removed as "never reached")."""
    from tests.llm.fake_server import Canned, FakeServer, oa_chunk, openai_stream

    stream = openai_stream(oa_chunk(content="The answer "), oa_chunk(content="is forty"))
    dropping = Canned(stream.status, stream.headers, stream.parts, chunked=True, drop_after=2)
    with FakeServer() as server:
        for _ in range(4):  # the failed call and any retries dsh makes
            server.queue(dropping)
        url = server.url + "/v1"
        result = dsh(
            "run", "--base-url", url, "--model", "m", "--context-window", "8192", "hi",
            env=env, cwd=tmp_path, check=False,
        )  # fmt: skip
    assert result.returncode == 1
    assert "CONNECTION" in result.stderr
    assert "never reached" not in result.stderr
    session_id = run_session_id(result.stderr)
    shown = dsh("sessions", "show", session_id, env=env, cwd=tmp_path).stdout
    assert "The answer is forty" in shown
