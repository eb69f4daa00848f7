"""The event codec (docs/architecture.md, "The session log"; docs/events.md): lossless round
trips, camelCase on disk, refusing values JSON cannot carry, and the constant-time predicates."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.errors import EventValidationError, LogCorruptError
from dsh.events import (
    APPEND,
    KNOWN_EVENT_CLASSES,
    AssistantChunk,
    AssistantChunkEvent,
    AssistantMessage,
    AssistantMessageEvent,
    CommandDone,
    CommandDoneEvent,
    CommandRun,
    CommandRunEvent,
    CompactionEnd,
    CompactionEndEvent,
    CompactionPlan,
    CompactionPlanEvent,
    CompactionPrune,
    CompactionPruneEvent,
    CompactionStart,
    CompactionStartEvent,
    CompactionSummary,
    CompactionSummaryEvent,
    LlmRetry,
    LlmRetryEvent,
    Message,
    ModelSource,
    OpaqueEvent,
    PluginSource,
    ReasoningBlock,
    RecordedCompaction,
    RegionText,
    ReplaceOp,
    RequestConfig,
    RequestContext,
    RequestContextEvent,
    RequestError,
    RequestErrorEvent,
    RequestHeader,
    RequestHeaderBody,
    RequestHeaderEvent,
    SessionEndSeed,
    SessionEndSeedEvent,
    SessionSettings,
    SessionSettingsEvent,
    SessionTitle,
    SessionTitleEvent,
    SessionWorkspace,
    SessionWorkspaceEvent,
    StepEnd,
    StepEndEvent,
    StepStart,
    StepStartEvent,
    StreamChunk,
    TextBlock,
    Todo,
    TodoWrite,
    TodoWriteEvent,
    ToolCall,
    ToolCallBlock,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResult,
    ToolResultBlock,
    ToolResultEvent,
    ToolSource,
    TurnEnd,
    TurnEndEvent,
    TurnEndReason,
    TurnStart,
    TurnStartEvent,
    Usage,
    UserMessageEvent,
    UserSource,
    decode_event_line,
    decode_event_lines,
    decode_events,
    encode_event,
    event_type_of,
    is_append_surface_event,
    is_checkpoint_event,
    is_compact_checkpoint_source,
    is_replacement_surface_event,
    is_surface_event,
)
from dsh.store import MemoryStore
from tests.helpers import checkpoint_message, new_session, tool_result_message, user_message

T = 1_790_000_000_000
FULL_USAGE = Usage(
    input_tokens=900,
    output_tokens=80,
    cache_read_tokens=4000,
    cache_write_tokens=12,
    reasoning_tokens=30,
)
CALL = ToolCallBlock(id="call-1", name="edit_file", arguments='{"path":"a.py","old":"x"')
TOOL_MESSAGE = Message(
    id="r-1",
    role="tool",
    content=(
        ToolResultBlock(
            tool_call_id="call-1", content=(TextBlock(text="no such file"),), is_error=True
        ),
    ),
    source=ToolSource(call_id="call-1"),
)

# One example of every event class, every optional field set, seq = position.
EXAMPLES: list[Any] = [
    TurnStartEvent(seq=0, time=T, data=TurnStart(turn=1)),
    StepStartEvent(seq=1, time=T, data=StepStart(turn=1, step=1)),
    UserMessageEvent(
        seq=2,
        time=T,
        data=Message(
            id="u-1", role="user", content=(TextBlock(text='héllo 🌍 "q"\n'),), source=UserSource()
        ),
        surface_op=APPEND,
    ),
    RequestHeaderEvent(
        seq=3,
        time=T,
        data=RequestHeader(
            header=RequestHeaderBody(
                config=RequestConfig(
                    provider="deepseek",
                    model="deepseek-chat",
                    params={"temperature": 0.2, "max_tokens": 4096, "stop": ["\n\n"], "x": None},
                ),
                system="You are a coding agent.",
                tools=({"name": "edit_file", "parameters": {"type": "object", "required": []}},),
            ),
            reason="initial",
        ),
    ),
    RequestContextEvent(
        seq=4,
        time=T,
        data=RequestContext(provider="deepseek", model="deepseek-chat", context_window=128_000),
    ),
    AssistantChunkEvent(
        seq=5,
        time=T,
        data=AssistantChunk(
            turn=1,
            step=1,
            chunk=StreamChunk(type="tool-call", delta='{"pa', index=0, id="call-1", name="edit"),
        ),
    ),
    AssistantMessageEvent(
        seq=6,
        time=T,
        data=AssistantMessage(
            turn=1,
            step=1,
            message=Message(
                id="a-1",
                role="assistant",
                content=(ReasoningBlock(text="hmm"), TextBlock(text="Editing."), CALL),
                source=ModelSource(provider="deepseek", model="deepseek-chat"),
            ),
            usage=FULL_USAGE,
            interrupted=True,
        ),
        surface_op=APPEND,
        source_event_seqs=(5,),
    ),
    ToolCallEvent(
        seq=7,
        time=T,
        data=ToolCall(turn=1, step=1, call_id="call-1", name="edit_file", arguments=CALL.arguments),
    ),
    ToolResultEvent(
        seq=8,
        time=T,
        data=ToolResult(
            turn=1,
            step=1,
            message=TOOL_MESSAGE,
            error=ToolErrorInfo(name="edit_file", code="ENOENT"),
            meta={"exitCode": 1, "elapsed": 0.25, "lines": [1, 2], "nested": {"ok": False}},
        ),
        surface_op=APPEND,
        source_event_seqs=(7,),
    ),
    RequestErrorEvent(
        seq=9,
        time=T,
        data=RequestError(turn=1, step=2, code="RATE_LIMITED", message="slow down", retryable=True),
    ),
    LlmRetryEvent(
        seq=10,
        time=T,
        ignorable=True,
        data=LlmRetry(turn=1, step=2, attempt=2, code="RATE_LIMITED", message="m", delay_ms=1500),
    ),
    StepEndEvent(seq=11, time=T, data=StepEnd(turn=1, step=1)),
    TurnEndEvent(
        seq=12,
        time=T,
        data=TurnEnd(turn=1, reason=TurnEndReason(kind="error", error="provider down")),
    ),
    SessionEndSeedEvent(seq=13, time=T, data=SessionEndSeed()),
    TodoWriteEvent(
        seq=14,
        time=T,
        data=TodoWrite(
            todos=(
                Todo(content="write tests", status="in_progress"),
                Todo(content="ship", status="pending"),
            )
        ),
    ),
    CommandRunEvent(
        seq=15, time=T, data=CommandRun(command_id="cmd-1", name="compact", args="keep the API")
    ),
    CompactionStartEvent(
        seq=16,
        time=T,
        data=CompactionStart(
            compaction_id="cmp-1", pass_id="pass-1", turn=None, source_command_id="cmd-1"
        ),
    ),
    CompactionPlanEvent(
        seq=17,
        time=T,
        data=CompactionPlan(
            pass_id="pass-1",
            regions=(
                RegionText(
                    kind="state",
                    shadowed_seqs=(2, 6, 8),
                    input_range=(2, 8),
                    summary="s",
                    raw_output="raw",
                    usage=FULL_USAGE,
                    degraded="fallback",
                ),
            ),
        ),
    ),
    CompactionSummaryEvent(
        seq=18,
        time=T,
        data=CompactionSummary(
            compaction_id="cmp-1",
            pass_id="pass-1",
            kind="state",
            summary="s",
            shadowed_range=(2, 8),
            shadowed_seqs=(2, 6, 8),
            shadowed_token_count=77,
            input_range=(2, 8),
            provider="deepseek",
            model="deepseek-chat",
            usage=FULL_USAGE,
            raw_output="raw",
            llm_stream_call=True,
            degraded="pointer",
        ),
    ),
    UserMessageEvent(
        seq=19,
        time=T,
        data=Message(
            id="c-1",
            role="user",
            content=(TextBlock(text="s"),),
            source=PluginSource(plugin="compact", compaction_id="cmp-1", source_command_id="cmd-1"),
        ),
        surface_op=ReplaceOp(start=2, end=8),
        source_event_seqs=(16, 18, 2, 6, 8),
    ),
    CompactionEndEvent(
        seq=20,
        time=T,
        data=CompactionEnd(compaction_id="cmp-1", pass_id="pass-1", turn=None, error="late"),
    ),
    CommandDoneEvent(
        seq=21,
        time=T,
        data=CommandDone(command_id="cmd-1", ok=True, text="compacted", source_event_seq=18),
    ),
    CompactionPruneEvent(
        seq=22,
        time=T,
        data=CompactionPrune(shadowed_range=(8, 8), shadowed_seqs=(8,), shadowed_token_count=9),
    ),
    SessionWorkspaceEvent(seq=23, time=T, data=SessionWorkspace(cwd="/b", recorded="/a")),
    SessionSettingsEvent(
        seq=24,
        time=T,
        data=SessionSettings(
            provider="openai-compatible",
            model="qwen",
            compaction=RecordedCompaction(
                backend="basic",
                threshold_ratio=0.8,
                low_watermark_ratio=0.4,
                retain_ratio=0.16,
                chunk_tokens=4000,
                stub_tokens=200,
                state_max_tokens=4096,
                stub_region_ratio=0.3,
                min_stale_ratio=0.0625,
                summarizer="extractive",
                retain_tokens=500,
                summarizer_provider="ollama",
                summarizer_base_url="http://127.0.0.1:11434/v1",
            ),
            workspace="/a",
            base_url="http://127.0.0.1:8080/v1",
            context_window=4000,
            changed=("compaction.backend",),
        ),
    ),
    SessionTitleEvent(seq=25, time=T, data=SessionTitle(title="Fix the failing test")),
]


def _keys(value: Any) -> set[str]:
    """Every object key in a JSON value, at any depth."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_examples_cover_every_known_event_class():
    """A new event type without an example here fails this test."""
    assert {type(e) for e in EXAMPLES} == set(KNOWN_EVENT_CLASSES)
    assert [e.seq for e in EXAMPLES] == list(range(len(EXAMPLES)))


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: event_type_of(e))
def test_every_event_class_round_trips_losslessly(event):
    raw = encode_event(event)
    decoded = decode_event_line(raw, line=1)
    assert decoded == event
    assert type(decoded) is type(event)
    assert encode_event(decoded) == raw
    assert json.loads(raw)["type"] == event_type_of(event)


def test_a_whole_log_of_every_event_class_round_trips_through_the_batch_decoder():
    lines = [encode_event(e) for e in EXAMPLES]
    assert decode_events(lines) == EXAMPLES
    store = MemoryStore()
    log = store.create(cwd="/", seed=EXAMPLES)
    log.close()
    assert list(store.open(log.id).events) == EXAMPLES


def test_keys_on_disk_are_camel_case():
    on_disk = [json.loads(encode_event(e)) for e in EXAMPLES]
    keys = set().union(*(_keys(d) for d in on_disk))
    for camel in (
        "surfaceOp",
        "sourceEventSeqs",
        "callId",
        "toolCallId",
        "compactionId",
        "shadowedRange",
        "shadowedSeqs",
        "shadowedTokenCount",
        "inputRange",
        "passId",
        "sourceCommandId",
        "rawOutput",
        "llmStreamCall",
        "inputTokens",
        "cacheReadTokens",
        "cacheWriteTokens",
        "reasoningTokens",
        "contextWindow",
        "commandId",
        "sourceEventSeq",
        "delayMs",
        "isError",
    ):
        assert camel in keys
    # Only free-form values (request params) may hold a snake_case key.
    assert {k for k in keys if "_" in k} == {"max_tokens"}


def test_envelope_carries_only_the_fields_that_are_set():
    turn_start = json.loads(encode_event(EXAMPLES[0]))
    assert turn_start == {"type": "turn/start", "seq": 0, "time": T, "data": {"turn": 1}}
    retry = json.loads(encode_event(EXAMPLES[10]))
    assert retry["ignorable"] is True
    checkpoint = json.loads(encode_event(EXAMPLES[19]))
    assert checkpoint["surfaceOp"] == {"op": "replace", "start": 2, "end": 8}
    assert checkpoint["data"]["source"] == {
        "kind": "plugin",
        "plugin": "compact",
        "compactionId": "cmp-1",
        "sourceCommandId": "cmd-1",
    }


def test_unknown_field_in_a_known_event_refuses_the_load_naming_its_line():
    raw = b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"extra":true}}'
    with pytest.raises(LogCorruptError, match="line 7") as caught:
        decode_events([raw], first_line=7)
    assert caught.value.line == 7


def test_unknown_ignorable_event_decodes_as_opaque_and_reencodes_byte_for_byte():
    raw = b'{"seq":4, "type":"x/y","ignorable":true,"time":9,"data":[1, 2.50]}'
    event = decode_event_line(raw, line=1)
    assert isinstance(event, OpaqueEvent)
    assert (event.type, event.seq, event.time, event.ignorable) == ("x/y", 4, 9, True)
    assert encode_event(event) == raw


# ---- values JSON cannot carry ---------------------------------------------------------------

UNREPRESENTABLE = {
    "nan": math.nan,
    "infinity": math.inf,
    "minus infinity": -math.inf,
    "nan in a list": [1.0, math.nan],
    "infinity in a nested object": {"deep": {"x": math.inf}},
    "non-string key": {1: "one"},
    "set": {1, 2},
    "arbitrary object": object(),
}


def _tool_result(meta: Any) -> ToolResult:
    return ToolResult(turn=1, step=1, message=tool_result_message("c", "out"), meta={"v": meta})


def _header(params: dict[str, Any] | None = None, tools: Any = None) -> RequestHeader:
    return RequestHeader(
        header=RequestHeaderBody(
            config=RequestConfig(provider="p", model="m", params=params), tools=tools
        ),
        reason="change",
    )


@pytest.mark.parametrize("case", UNREPRESENTABLE)
@pytest.mark.parametrize("where", ["tool result meta", "header params", "header tools"])
def test_value_json_cannot_carry_is_refused_at_append_and_nothing_is_written(case, where):
    store = MemoryStore()
    session = new_session(store)
    session.append(user_message("hi"))
    value = UNREPRESENTABLE[case]
    payload = {
        "tool result meta": lambda: _tool_result(value),
        "header params": lambda: _header(params={"temperature": value}),
        "header tools": lambda: _header(tools=({"name": "t", "default": value},)),
    }[where]()
    with pytest.raises(EventValidationError):
        session.append(payload)
    assert len(session.events) == 1
    assert len(store.lines[session.id]) == 1
    assert session.nodes == [0]


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(user_message("broken \ud83d half"), id="message text"),
        pytest.param(_tool_result("\udc00"), id="meta value"),
        pytest.param(
            ToolResult(turn=1, step=1, message=tool_result_message("c", "x"), meta={"k\ud800": 1}),
            id="meta key",
        ),
        pytest.param(
            ToolCall(turn=1, step=1, call_id="c", name="t", arguments='{"a":"\udfff"}'),
            id="tool call arguments",
        ),
    ],
)
def test_lone_surrogate_string_is_refused_at_append_and_nothing_is_written(payload):
    store = MemoryStore()
    session = new_session(store)
    with pytest.raises(EventValidationError, match="not lossless JSON"):
        session.append(payload)
    assert list(session.events) == []
    assert store.lines[session.id] == []
    assert session.nodes == []


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(meta=st.dictionaries(st.text(), JSON_VALUES, max_size=4), text=st.text())
def test_any_json_value_in_meta_reloads_equal_so_memory_equals_storage(meta, text):
    store = MemoryStore()
    with new_session(store) as session:
        session.append(user_message(text))
        appended = session.append(_tool_result(meta))
    reloaded = store.open(session.id)
    assert reloaded.events[1] == appended
    assert encode_event(reloaded.events[1]) == store.lines[session.id][1]


# ---- per-event shape rules ------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(
            Message(id="x", role="assistant", content=(), source=UserSource()), id="user/message"
        ),
        pytest.param(
            AssistantMessage(turn=1, step=1, message=user_message("hi")), id="assistant/message"
        ),
        pytest.param(ToolResult(turn=1, step=1, message=user_message("hi")), id="tool/result role"),
        pytest.param(
            ToolResult(
                turn=1,
                step=1,
                message=Message(
                    id="r",
                    role="tool",
                    content=(*TOOL_MESSAGE.content, *TOOL_MESSAGE.content),
                    source=ToolSource(call_id="c"),
                ),
            ),
            id="tool/result with two blocks",
        ),
    ],
)
def test_surface_message_with_the_wrong_role_or_shape_is_refused_at_append(payload):
    session = new_session(MemoryStore())
    with pytest.raises(EventValidationError):
        session.append(payload)
    assert list(session.events) == []


def test_the_rest_of_a_log_decodes_from_its_first_seq_and_a_gap_names_its_line():
    """What a reader that remembers its place hands on: the lines after seq 1 of a log."""
    events = [TurnStartEvent(seq=seq, time=T, data=TurnStart(turn=seq + 1)) for seq in range(5)]
    rest = [encode_event(e) for e in events[2:]]
    body = b"".join(line + b"\n" for line in rest)
    assert decode_events(rest, first_line=4, first_seq=2) == events[2:]
    assert decode_event_lines(body, line_count=3, first_line=4, first_seq=2) == events[2:]
    with pytest.raises(LogCorruptError, match="line 4: expected seq 1 but found seq 2"):
        decode_event_lines(body, line_count=3, first_line=4, first_seq=1)
    with pytest.raises(LogCorruptError, match="line 5: expected seq 3 but found seq 4"):
        decode_events([rest[0], rest[2]], first_line=4, first_seq=2)


def test_negative_seq_in_a_stored_line_refuses_the_load():
    raw = encode_event(TurnStartEvent(seq=0, time=T, data=TurnStart(turn=1)))
    with pytest.raises(LogCorruptError, match=r"line 1 .*>= 0 - at `\$\.seq`"):
        decode_events([raw.replace(b'"seq":0', b'"seq":-1')])


# ---- predicates -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (PluginSource(plugin="compact"), True),
        (PluginSource(plugin="compact", compaction_id="cmp-1"), True),
        (PluginSource(plugin="memory"), False),
        (PluginSource(plugin="compactor", compaction_id="cmp-1"), False),
        (UserSource(), False),
        (ModelSource(provider="compact", model="compact"), False),
        (ToolSource(call_id="compact"), False),
    ],
)
def test_is_compact_checkpoint_source_truth_table(source, expected):
    assert is_compact_checkpoint_source(source) is expected


def _user(source: Any, op: Any) -> UserMessageEvent:
    message = Message(id="m", role="user", content=(TextBlock(text="t"),), source=source)
    sources = (0,) if op != APPEND else None
    return UserMessageEvent(seq=3, time=T, data=message, surface_op=op, source_event_seqs=sources)


REPLACE = ReplaceOp(start=0, end=0)
CHECKPOINT = PluginSource(plugin="compact", compaction_id="cmp-1")
ASSISTANT = EXAMPLES[6].data

# event → (is_surface, is_append, is_replacement, is_checkpoint)
PREDICATE_TABLE = [
    pytest.param(_user(UserSource(), APPEND), (True, True, False, False), id="user append"),
    pytest.param(_user(CHECKPOINT, REPLACE), (True, False, True, True), id="checkpoint replace"),
    pytest.param(
        _user(CHECKPOINT, APPEND), (True, True, False, False), id="checkpoint source appended"
    ),
    pytest.param(
        _user(PluginSource(plugin="memory"), REPLACE),
        (True, False, True, False),
        id="other plugin replace",
    ),
    pytest.param(
        AssistantMessageEvent(seq=3, time=T, data=ASSISTANT, surface_op=APPEND),
        (True, True, False, False),
        id="assistant append",
    ),
    pytest.param(
        AssistantMessageEvent(
            seq=3, time=T, data=ASSISTANT, surface_op=REPLACE, source_event_seqs=(0,)
        ),
        (True, False, True, False),
        id="assistant replace",
    ),
    pytest.param(EXAMPLES[8], (True, True, False, False), id="tool result append"),
    pytest.param(
        ToolResultEvent(
            seq=3,
            time=T,
            data=EXAMPLES[8].data,
            surface_op=REPLACE,
            source_event_seqs=(0,),
        ),
        (True, False, True, False),
        id="tool result replace",
    ),
    pytest.param(EXAMPLES[0], (False, False, False, False), id="turn/start"),
    pytest.param(EXAMPLES[18], (False, False, False, False), id="compaction/summary"),
    pytest.param(
        OpaqueEvent(type="x/y", seq=3, time=T, raw=b"{}"),
        (False, False, False, False),
        id="opaque",
    ),
]


@pytest.mark.parametrize(("event", "expected"), PREDICATE_TABLE)
def test_surface_predicates_truth_table(event, expected):
    assert (
        is_surface_event(event),
        is_append_surface_event(event),
        is_replacement_surface_event(event),
        is_checkpoint_event(event),
    ) == expected


def test_checkpoint_built_by_the_session_is_recognised_by_the_one_predicate():
    session = new_session(MemoryStore())
    first = session.append(user_message("a"))
    checkpoint = session.append(
        checkpoint_message("summary", "cmp-1"),
        surface_op=ReplaceOp(start=first.seq, end=first.seq),
        source_event_seqs=[first.seq],
    )
    assert is_checkpoint_event(checkpoint)
    assert not is_checkpoint_event(first)


def test_a_line_that_is_not_json_names_its_column_not_a_byte_that_reads_like_nul():
    """msgspec says ``invalid character (byte 0)``, which reads like a NUL byte in the file."""
    from dsh.events.codec import decode_event_line

    with pytest.raises(LogCorruptError) as refused:
        decode_event_line('{"type": "é", x}'.encode(), line=3)
    assert str(refused.value) == (
        "line 3: not valid JSON (JSON is malformed: object keys must be strings at column 15)"
    )


def test_json_problem_says_line_and_column_in_characters():
    import msgspec

    from dsh.errors import json_problem

    for data, said in (
        (b"hello world", "JSON is malformed: invalid character at column 1"),
        (
            '{"a": "é",\n "b": }'.encode(),
            "JSON is malformed: invalid character at line 2, column 7",
        ),
        (b"[1,", "Input data was truncated"),  # no place given: kept as it is
    ):
        with pytest.raises(msgspec.DecodeError) as error:
            msgspec.json.decode(data)
        assert json_problem(error.value, data) == said
