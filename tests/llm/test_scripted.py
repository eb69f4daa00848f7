"""The scripted provider: script files, entry selection from the log, errors, usage and cache."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from dsh.demo import demo_script
from dsh.errors import ConfigError, ProviderError
from dsh.events import (
    AssistantMessage,
    Event,
    Message,
    RequestError,
    ToolCallBlock,
    Usage,
)
from dsh.llm.assemble import StreamAssembler
from dsh.llm.scripted import ScriptedProvider, ScriptEntry, ScriptToolCall, load_script
from dsh.llm.types import (
    Finish,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)
from dsh.store import MemoryStore
from dsh.surface import Session, message_tokens, system_tokens, tools_tokens
from tests.helpers import append_chat_turn, new_session, user_message

SYSTEM = "You are a coding agent. Be brief."
TOOLS = ({"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}},)


def collect(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    async def drain() -> list[StreamEvent]:
        return [event async for event in stream]

    return asyncio.run(drain())


def request(*messages: Message) -> ModelRequest:
    return ModelRequest(
        provider="scripted", model="scripted", system=SYSTEM, tools=TOOLS, messages=messages
    )


def reply(provider: ScriptedProvider, history: Sequence[Event] = ()) -> StreamAssembler:
    """Call the provider once and assemble what it streamed."""
    return StreamAssembler().feed_all(
        collect(provider.stream(request(user_message("go")), history=history))
    )


def log_error(session: Session, code: str = "RATE_LIMITED") -> None:
    session.append(RequestError(turn=1, step=1, code=code, message="failed", retryable=True))


# ---- script files ---------------------------------------------------------------------------


def test_a_json_script_file_loads_as_a_list_of_entries(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            [
                {"text": "Looking.", "toolCalls": [{"name": "read_file", "arguments": {"p": 1}}]},
                {"error": {"code": "RATE_LIMITED", "message": "slow down"}, "delayMs": 5},
                {"text": "done", "usage": {"inputTokens": 9, "outputTokens": 2}},
            ]
        )
    )
    entries = load_script(path)
    assert len(entries) == 3
    assert entries[0].tool_calls == (ScriptToolCall(name="read_file", arguments={"p": 1}),)
    assert entries[0].tool_calls[0].arguments_json() == '{"p":1}'
    assert entries[1].error is not None and entries[1].error.code == "RATE_LIMITED"
    assert entries[1].delay_ms == 5
    assert entries[2].usage == Usage(input_tokens=9, output_tokens=2)


def test_a_yaml_script_file_loads_with_or_without_the_entries_key(tmp_path: Path) -> None:
    body = """
- reasoning: the user wants a file
  toolCalls:
    - name: read_file
      arguments: '{"path": "a.txt"}'
- text: It says hello.
"""
    plain = tmp_path / "script.yaml"
    plain.write_text(body)
    wrapped = tmp_path / "script.yml"
    wrapped.write_text("entries:\n" + "\n".join("  " + line for line in body.splitlines()))

    entries = load_script(plain)
    assert entries == load_script(wrapped)
    assert entries[0].reasoning == "the user wants a file"
    # A string is the raw JSON the model produced: kept byte for byte.
    assert entries[0].tool_calls[0].arguments_json() == '{"path": "a.txt"}'
    assert entries[1] == ScriptEntry(text="It says hello.")


@pytest.mark.parametrize(
    ("name", "body", "expected"),
    [
        ("s.json", '[{"text": "ok"}, {"txt": "typo"}]', "entry 1"),
        ("s.json", '[{"text": "ok"}, {"text": "ok"}, {"text": 3}]', "entry 2"),
        ("s.json", '[{"error": {"code": "NOT_A_CODE"}}]', "entry 0"),
        ("s.json", '[{"toolCalls": [{"arguments": "{}"}]}]', "entry 0"),
        ("s.json", '[{"delayMs": -1}]', "entry 0"),
        ("s.json", '[{"text": "hi", "error": {"code": "AUTH"}}]', "entry 0"),
        ("s.json", '[{"finish": "filtered", "error": {"code": "AUTH"}}]', "entry 0"),
        ("s.json", '[{"text": "hi", "finish": "truncated"}]', "entry 0"),
        ("s.json", '[{"chunkDelayMs": -1}]', "entry 0"),
        ("s.yaml", "- text: ok\n- usage: {inputTokens: many}\n", "entry 1"),
        ("s.json", '{"text": "not a list"}', "list of entries"),
        ("s.json", "[{", "not valid JSON"),
        ("s.yaml", "- text: [unclosed\n", "not valid YAML"),
        ("s.txt", "[]", ".json, .yaml or .yml"),
    ],
)
def test_a_bad_script_is_a_config_error_naming_the_file_and_entry(
    tmp_path: Path, name: str, body: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(body)
    with pytest.raises(ConfigError) as caught:
        load_script(path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_a_missing_script_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_script(tmp_path / "absent.json")


# ---- which entry answers --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["s.yaml", "s.json"])
def test_a_script_that_is_not_utf8_is_a_config_error_naming_the_byte(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    path.write_bytes(b"- text: caf\xe9\n")
    with pytest.raises(ConfigError) as caught:
        load_script(path)
    assert str(caught.value) == f"{path}: a script must be UTF-8 text (byte 0xe9 at offset 11)"


def test_entry_n_answers_the_nth_model_call_counted_from_the_log() -> None:
    provider = ScriptedProvider([{"text": f"reply {i}"} for i in range(5)])
    session = new_session(MemoryStore())
    assert reply(provider, session.events).text == "reply 0"
    append_chat_turn(session)  # one assistant/message
    assert reply(provider, session.events).text == "reply 1"
    log_error(session)  # a failed call counts too
    assert reply(provider, session.events).text == "reply 2"
    append_chat_turn(session)
    log_error(session)
    assert reply(provider, session.events).text == "reply 4"
    # Asking again without logging anything gets the same entry again.
    assert reply(provider, session.events).text == "reply 4"


def test_two_fresh_providers_over_the_same_log_answer_the_same_entry() -> None:
    entries = [ScriptEntry(text="first"), ScriptEntry(text="second"), ScriptEntry(text="third")]
    session = new_session(MemoryStore())
    append_chat_turn(session)
    log_error(session)
    # Like two processes (or a resumed session): nothing but the log decides.
    one, other = ScriptedProvider(entries), ScriptedProvider(entries)
    assert reply(one, session.events).text == reply(other, session.events).text == "third"


def test_remaining_counts_the_entries_the_log_has_not_used() -> None:
    provider = ScriptedProvider([{"text": "a"}, {"text": "b"}])
    session = new_session(MemoryStore())
    assert provider.remaining(session.events) == 2
    append_chat_turn(session)
    assert provider.remaining(session.events) == 1
    append_chat_turn(session)
    append_chat_turn(session)
    assert provider.remaining(session.events) == 0


def test_a_call_past_the_end_of_the_script_is_script_exhausted() -> None:
    provider = ScriptedProvider([{"text": "a"}, {"text": "b"}])
    session = new_session(MemoryStore())
    append_chat_turn(session)
    append_chat_turn(session)
    with pytest.raises(ProviderError) as caught:
        reply(provider, session.events)
    assert caught.value.code == "SCRIPT_EXHAUSTED"
    assert caught.value.retryable is False
    assert "2 entries" in str(caught.value)


def test_a_script_says_what_a_call_past_its_end_is_told(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("whenOver: the demo is over\nentries:\n  - text: a\n")
    provider = ScriptedProvider.from_file(path)
    session = new_session(MemoryStore())
    append_chat_turn(session)
    with pytest.raises(ProviderError) as caught:
        reply(provider, session.events)
    assert caught.value.code == "SCRIPT_EXHAUSTED"
    assert str(caught.value).endswith("the demo is over")
    path.write_text("whenOver: 3\nentries: []\n")
    with pytest.raises(ConfigError, match="whenOver must be a non-empty string"):
        ScriptedProvider.from_file(path)


def test_the_demos_script_says_the_demo_is_over_past_its_last_answer() -> None:
    """Said wherever the demo's session goes on: it told a ``dsh run --session`` user to
    "Quit (ctrl+q)"; the terminal UI's keys are now named as the UI's."""
    with demo_script() as script:
        provider = ScriptedProvider.from_file(script)
    said = provider.when_over
    assert said is not None and "end of the demo" in said
    assert "Quit" not in said  # no face's own step as everyone's
    assert said.endswith("in the terminal UI, leave this demo first with /quit or ctrl+q.")
    assert said.count("ctrl+q") == 1


# ---- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "retryable"),
    [("RATE_LIMITED", True), ("UNAVAILABLE", True), ("CONTEXT_WINDOW_EXCEEDED", False)],
)
def test_an_error_entry_raises_its_code_with_the_mapped_retryable_flag(
    code: str, retryable: bool
) -> None:
    provider = ScriptedProvider([{"error": {"code": code, "message": "scripted failure"}}])
    with pytest.raises(ProviderError) as caught:
        reply(provider)
    assert caught.value.code == code
    assert caught.value.retryable is retryable
    assert "scripted failure" in str(caught.value)


def test_a_delay_sleeps_cancellably_before_streaming() -> None:
    provider = ScriptedProvider([{"text": "late", "delayMs": 60_000}])

    async def cancel_while_waiting() -> bool:
        task = asyncio.ensure_future(
            asyncio.wait_for(
                anext(provider.stream(request(user_message("go")), history=())), timeout=0.05
            )
        )
        try:
            await task
        except TimeoutError:
            return True
        return False

    assert asyncio.run(cancel_while_waiting())


# ---- streaming ------------------------------------------------------------------------------


def test_a_reply_streams_reasoning_text_tool_calls_usage_and_finish() -> None:
    provider = ScriptedProvider(
        [
            {
                "reasoning": "need the file",
                "text": "Reading.",
                "toolCalls": [
                    {"name": "read_file", "arguments": {"path": "a.txt"}},
                    {"name": "grep", "arguments": '{"q":"x"}'},
                ],
            }
        ]
    )
    assembler = reply(provider)
    message = assembler.message("a", "scripted", "scripted")
    assert message.tool_calls() == (
        ToolCallBlock(id="call_0_0", name="read_file", arguments='{"path":"a.txt"}'),
        ToolCallBlock(id="call_0_1", name="grep", arguments='{"q":"x"}'),
    )
    assert assembler.reasoning == "need the file"
    assert assembler.text == "Reading."
    assert assembler.finish == "tool-calls"
    assert assembler.usage is not None


def test_tool_call_ids_follow_the_call_number_from_the_log() -> None:
    provider = ScriptedProvider([{"text": "hi"}, {"toolCalls": [{"name": "t"}, {"name": "t"}]}])
    session = new_session(MemoryStore())
    append_chat_turn(session)
    calls = reply(provider, session.events).message("a", "p", "m").tool_calls()
    assert [c.id for c in calls] == ["call_1_0", "call_1_1"]
    assert [c.arguments for c in calls] == ["{}", "{}"]


def test_a_reply_without_tool_calls_finishes_with_stop() -> None:
    assert reply(ScriptedProvider([{"text": "hi"}])).finish == "stop"
    assert reply(ScriptedProvider([{}])).message("a", "p", "m").content == ()


@pytest.mark.parametrize("calls", [(), ({"name": "read_file", "arguments": {"path": "a"}},)])
def test_an_entry_can_finish_cut_at_the_output_limit(calls: tuple[dict[str, object], ...]) -> None:
    provider = ScriptedProvider(
        [{"text": "a long answ", "toolCalls": calls, "finish": "max-tokens"}]
    )
    assert reply(provider).finish == "max-tokens"


def test_a_chunk_delay_waits_before_each_piece_after_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr("dsh.llm.scripted.asyncio.sleep", sleep)
    entry = {"text": "abcdefgh", "chunkDelayMs": 250}
    provider = ScriptedProvider([entry], chunk_size=3)
    events = collect(provider.stream(request(user_message("go")), history=()))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["abc", "def", "gh"]
    assert waits == [0.25, 0.25]


def test_chunked_streaming_sends_pieces_that_reassemble_to_the_same_message() -> None:
    entry = {
        "reasoning": "a long line of thought",
        "text": "The answer is forty-two, give or take.",
        "toolCalls": [{"name": "write_file", "arguments": {"path": "x.py", "body": "print(1)"}}],
    }
    whole = collect(ScriptedProvider([entry]).stream(request(user_message("go")), history=()))
    chunked = collect(
        ScriptedProvider([entry], chunk_size=5).stream(request(user_message("go")), history=())
    )

    text_pieces = [e.text for e in chunked if isinstance(e, TextDelta)]
    call_pieces = [e for e in chunked if isinstance(e, ToolCallDelta)]
    assert len(text_pieces) > 1 and all(len(p) <= 5 for p in text_pieces)
    assert len(call_pieces) > 1
    assert call_pieces[0].id == "call_0_0" and call_pieces[0].name == "write_file"
    assert all(p.id is None and p.name is None for p in call_pieces[1:])
    assert isinstance(chunked[-2], UsageReport) and isinstance(chunked[-1], Finish)
    assert StreamAssembler().feed_all(chunked).message("a", "p", "m") == StreamAssembler().feed_all(
        whole
    ).message("a", "p", "m")


def test_requests_received_are_kept_in_order() -> None:
    provider = ScriptedProvider([{"text": "a"}, {"text": "b"}])
    first, second = request(user_message("one")), request(user_message("two"))
    collect(provider.stream(first, history=()))
    collect(provider.stream(second, history=()))
    assert provider.requests == [first, second]


# ---- usage ----------------------------------------------------------------------------------


def test_scripted_usage_is_reported_as_given() -> None:
    usage = {"inputTokens": 1000, "outputTokens": 20, "cacheReadTokens": 800}
    assembler = reply(ScriptedProvider([{"text": "hi", "usage": usage}], cache="deepseek"))
    assert assembler.usage == Usage(input_tokens=1000, output_tokens=20, cache_read_tokens=800)


def test_usage_defaults_to_the_token_heuristic_of_request_and_reply() -> None:
    prompt = user_message("what is in a.txt?")
    events = collect(
        ScriptedProvider([{"text": "It says hello."}]).stream(request(prompt), history=())
    )
    assembler = StreamAssembler().feed_all(events)
    expected_input = tools_tokens(TOOLS) + system_tokens(SYSTEM) + message_tokens(prompt)
    expected_output = message_tokens(assembler.message("a", "p", "m"))
    assert assembler.usage == Usage(input_tokens=expected_input, output_tokens=expected_output)


def test_simulated_deepseek_cache_hits_the_growing_conversation_on_the_second_call() -> None:
    provider = ScriptedProvider(
        [{"text": "Hello! What next?"}, {"text": "Done."}], cache="deepseek"
    )
    session = new_session(MemoryStore())
    first_prompt, second_prompt = user_message("hi"), user_message("now list the files")

    first = StreamAssembler().feed_all(
        collect(provider.stream(request(first_prompt), history=session.events))
    )
    assert first.usage is not None and first.usage.cache_read_tokens == 0
    # The loop logs the reply under its own id; the cache still recognises it.
    logged = first.message("a-logged", "scripted", "scripted")
    session.append(AssistantMessage(turn=1, step=1, message=logged, usage=first.usage))

    second_request = request(first_prompt, logged, second_prompt)
    second = StreamAssembler().feed_all(
        collect(provider.stream(second_request, history=session.events))
    )
    usage = second.usage
    assert usage is not None and usage.cache_read_tokens is not None
    # Tools + system + prompt 1 + reply 1 were saved (user input, then model output).
    prefix = (
        tools_tokens(TOOLS)
        + system_tokens(SYSTEM)
        + message_tokens(first_prompt)
        + message_tokens(logged)
    )
    assert usage.cache_read_tokens == prefix > 0
    # Input excludes cache reads: together they are the whole request.
    assert usage.input_tokens == message_tokens(second_prompt)
    assert usage.request_tokens() == prefix + message_tokens(second_prompt)


def test_a_fresh_provider_starts_with_a_cold_simulated_cache() -> None:
    entries = [{"text": "a"}, {"text": "b"}]
    session = new_session(MemoryStore())
    append_chat_turn(session)
    resumed = ScriptedProvider(entries, cache="deepseek")
    usage = reply(resumed, session.events).usage
    assert usage is not None and usage.cache_read_tokens == 0
