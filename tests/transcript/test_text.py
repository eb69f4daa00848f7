"""``transcript_blocks`` renders a log in one pass; its blocks equal rendering, one by one, the
items the projector gives, over random logs (every event the transcript shows or skips)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.events import (
    AssistantMessage,
    AssistantMessageEvent,
    Block,
    CommandDone,
    CommandDoneEvent,
    CompactionEnd,
    CompactionEndEvent,
    CompactionStart,
    CompactionStartEvent,
    CompactionSummary,
    CompactionSummaryEvent,
    Event,
    Message,
    ModelSource,
    OpaqueEvent,
    PluginSource,
    ReasoningBlock,
    ReplaceOp,
    Source,
    StepStart,
    StepStartEvent,
    TextBlock,
    ToolCall,
    ToolCallBlock,
    ToolCallEvent,
    ToolResult,
    ToolResultBlock,
    ToolResultEvent,
    ToolSource,
    TurnEnd,
    TurnEndEvent,
    TurnEndReason,
    UserMessageEvent,
    UserSource,
)
from dsh.transcript import (
    TRANSCRIPT_SEPARATOR,
    render_human_transcript,
    transcript_blocks,
    transcript_items,
)
from dsh.transcript.text import render_item

_text = st.text(st.sampled_from("ab …é\n\x1b[m"), max_size=6)
_ids = st.sampled_from(["k1", "k2", "k3"])
_op = st.sampled_from(["append", ReplaceOp(start=0, end=0)])
_calls = st.sampled_from(["c1", "c2"])
_pid = st.none() | st.sampled_from(["p1", "p2"])

_block = st.one_of(
    st.builds(TextBlock, text=_text),
    st.builds(ReasoningBlock, text=_text),
    st.builds(ToolCallBlock, id=_calls, name=_text, arguments=_text),
)


def _message(role: str, content: list[Block], source: Source) -> Message:
    return Message(id="m", role=role, content=tuple(content), source=source)  # type: ignore[arg-type]


_user_source = st.one_of(
    st.just(UserSource()),
    st.builds(PluginSource, plugin=st.sampled_from(["compact", "workspace"])),
    st.builds(PluginSource, plugin=st.just("compact"), compaction_id=_ids),
)


def _user(content: list[Block], source: Source, op: object) -> UserMessageEvent:
    message = _message("user", content, source)
    return UserMessageEvent(seq=0, time=0, data=message, surface_op=op)  # type: ignore[arg-type]


def _assistant(
    content: list[Block], op: object, code: str | None, not_run: tuple[str, ...] = ()
) -> AssistantMessageEvent:
    message = _message("assistant", content, ModelSource(provider="p", model="m"))
    data = AssistantMessage(
        turn=1, step=1, message=message, error_code=code, text_calls_not_run=not_run
    )
    return AssistantMessageEvent(seq=0, time=0, data=data, surface_op=op)  # type: ignore[arg-type]


def _result(call: str, texts: list[str], is_error: bool, op: object) -> ToolResultEvent:
    parts = tuple(TextBlock(text=t) for t in texts)
    block = ToolResultBlock(tool_call_id=call, content=parts, is_error=is_error)
    data = ToolResult(turn=1, step=1, message=_message("tool", [block], ToolSource(call_id=call)))
    return ToolResultEvent(seq=0, time=0, data=data, surface_op=op)  # type: ignore[arg-type]


def _summary(compaction_id: str, pass_id: str | None) -> CompactionSummaryEvent:
    data = CompactionSummary(
        compaction_id=compaction_id,
        pass_id=pass_id,
        summary="s",
        shadowed_range=(0, 0),
        shadowed_seqs=(0,),
        shadowed_token_count=1,
        provider="p",
        model="m",
    )
    return CompactionSummaryEvent(seq=0, time=0, data=data)


_kinds = st.sampled_from(["completed", "aborted", "error", "max-tokens", "interrupted"])

_event = st.one_of(
    st.builds(_user, st.lists(st.builds(TextBlock, text=_text), max_size=2), _user_source, _op),
    st.builds(
        _assistant,
        st.lists(_block, max_size=4),
        _op,
        st.none() | _text,
        st.lists(_text, max_size=2).map(tuple),
    ),
    st.builds(_result, _calls, st.lists(_text, max_size=2), st.booleans(), _op),
    st.builds(
        lambda call, name, mark: ToolCallEvent(
            seq=0,
            time=0,
            data=ToolCall(turn=1, step=1, call_id=call, name=name, arguments="{}", over_limit=mark),
        ),
        _calls,
        _text,
        st.sampled_from([0, 0, 1, 2]),  # past tools.max_calls_per_reply: folded
    ),
    st.builds(
        lambda kind, error: TurnEndEvent(
            seq=0, time=0, data=TurnEnd(turn=1, reason=TurnEndReason(kind=kind, error=error))
        ),
        _kinds,
        st.none() | _text,
    ),
    st.builds(
        lambda text: CommandDoneEvent(
            seq=0, time=0, data=CommandDone(command_id="x", ok=True, text=text)
        ),
        _text,
    ),
    st.builds(
        lambda cid, pid: CompactionStartEvent(
            seq=0, time=0, data=CompactionStart(compaction_id=cid, pass_id=pid, turn=None)
        ),
        _ids,
        _pid,
    ),
    st.builds(
        lambda cid, pid, turn, error: CompactionEndEvent(
            seq=0,
            time=0,
            data=CompactionEnd(compaction_id=cid, pass_id=pid, turn=turn, error=error),
        ),
        _ids,
        _pid,
        st.none() | st.just(3),
        st.none() | _text,
    ),
    st.builds(_summary, _ids, _pid),
    st.just(StepStartEvent(seq=0, time=0, data=StepStart(turn=1, step=1))),
    st.just(OpaqueEvent(type="x/y", seq=0, time=0, raw=b"{}")),
)


def _pass(compactions: list[str], pass_id: str | None) -> list[Event]:
    """A pass: its compactions start, then each lands a checkpoint (one marker in all)."""
    starts: list[Event] = [
        CompactionStartEvent(
            seq=0, time=0, data=CompactionStart(compaction_id=cid, pass_id=pass_id, turn=None)
        )
        for cid in compactions
    ]
    source = [PluginSource(plugin="compact", compaction_id=cid) for cid in compactions]
    op = ReplaceOp(start=0, end=0)
    return starts + [_user([TextBlock(text="payload")], s, op) for s in source]


_events = st.lists(
    st.one_of(st.lists(_event, max_size=3), st.builds(_pass, st.lists(_ids, min_size=1), _pid)),
    max_size=12,
).map(lambda chunks: [event for chunk in chunks for event in chunk])


def _log(events: list[Event]) -> list[Event]:
    """The events renumbered 0, 1, 2, … (a checkpoint without a compaction id is marked by its
    seq, so the seqs matter)."""
    return [
        OpaqueEvent(type=e.type, seq=seq, time=0, raw=e.raw)
        if isinstance(e, OpaqueEvent)
        else type(e)(**{**{f: getattr(e, f) for f in e.__struct_fields__}, "seq": seq})
        for seq, e in enumerate(events)
    ]


def reference_blocks(events: list[Event]) -> list[str]:
    """The transcript as the projector's items, each rendered on its own."""
    rendered = [render_item(item) for item in transcript_items(events)]
    return [text for text in rendered if text is not None]


@settings(max_examples=400)
@given(_events)
def test_blocks_equal_the_rendered_items_of_the_projector(events):
    log = _log(events)
    assert transcript_blocks(log) == reference_blocks(log)


@given(_events)
def test_the_transcript_is_the_blocks_apart_by_a_blank_line(events):
    log = _log(events)
    assert render_human_transcript(log) == TRANSCRIPT_SEPARATOR.join(reference_blocks(log))


def test_one_marker_per_pass_a_cut_off_reply_an_error_result_and_a_note():
    checkpoint = PluginSource(plugin="compact", compaction_id="k1")
    log = _log(
        [
            CompactionStartEvent(
                seq=0, time=0, data=CompactionStart(compaction_id="k1", pass_id="p1", turn=None)
            ),
            _user([TextBlock(text="a")], checkpoint, ReplaceOp(start=0, end=0)),
            _user([TextBlock(text="b")], checkpoint, ReplaceOp(start=0, end=0)),
            _assistant([TextBlock(text="hi")], "append", "overloaded"),
            _assistant([TextBlock(text="done")], "append", None, ("edit_file",)),
            _assistant([], "append", None),
            _result("c1", ["out"], True, "append"),
            TurnEndEvent(seq=0, time=0, data=TurnEnd(turn=1, reason=TurnEndReason(kind="error"))),
        ]
    )
    assert (
        transcript_blocks(log)
        == reference_blocks(log)
        == [
            "… earlier context was compacted …",
            "Assistant: hi\n(the reply was cut off: overloaded)",
            "Assistant: done\n(1 tool call written in the reply's text was not run (edit_file): "
            "the model wrote it as text instead of calling the tool)",
            "Tool result (error): out",
            "(Turn failed: unknown error)",
        ]
    )
