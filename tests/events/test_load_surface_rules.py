"""A stored log is refused at its first surface event that breaks a per-event rule, naming the
line and the rule as the append-time check words it; the load's quick look at the common case
(no ``sourceEventSeqs``, the right role and shape) lets no breach through."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.errors import EventValidationError, LogCorruptError
from dsh.events import (
    AssistantMessage,
    AssistantMessageEvent,
    Block,
    Event,
    Message,
    ReplaceOp,
    StepStart,
    StepStartEvent,
    TextBlock,
    ToolResult,
    ToolResultBlock,
    ToolResultEvent,
    UserMessageEvent,
    UserSource,
    decode_event_lines,
    decode_events,
    encode_event,
    validate_event_shape,
)

_role = st.sampled_from(["user", "assistant", "tool", "system"])
_result_block = st.builds(
    ToolResultBlock, tool_call_id=st.just("c"), content=st.just((TextBlock(text="r"),))
)
_content = st.lists(st.one_of(st.builds(TextBlock, text=st.just("t")), _result_block), max_size=2)
_sources = st.none() | st.lists(st.integers(-1, 12), max_size=3).map(tuple)
_op = st.sampled_from(["append", ReplaceOp(start=0, end=0)])


def _message(role: str, content: list[Block]) -> Message:
    return Message(id="m", role=role, content=tuple(content), source=UserSource())  # type: ignore[arg-type]


def _surface(kind: int, role: str, content: list[Block], sources, op) -> Event:  # type: ignore[no-untyped-def]
    message = _message(role, content)
    envelope = {"seq": 0, "time": 0, "surface_op": op, "source_event_seqs": sources}
    if kind == 0:
        return UserMessageEvent(data=message, **envelope)
    if kind == 1:
        data = AssistantMessage(turn=1, step=1, message=message)
        return AssistantMessageEvent(data=data, **envelope)
    return ToolResultEvent(data=ToolResult(turn=1, step=1, message=message), **envelope)


def _right(kind: int) -> Event:
    """A surface event of ``kind`` that keeps every rule."""
    role, content = [
        ("user", [TextBlock(text="t")]),
        ("assistant", [TextBlock(text="t")]),
        ("tool", [ToolResultBlock(tool_call_id="c", content=(TextBlock(text="r"),))]),
    ][kind]
    return _surface(kind, role, content, None, "append")


_event = st.one_of(
    st.builds(_surface, st.integers(0, 2), _role, _content, _sources, _op),
    st.builds(_right, st.integers(0, 2)),
    st.just(StepStartEvent(seq=0, time=0, data=StepStart(turn=1, step=1))),
)


def _numbered(events: list[Event]) -> list[Event]:
    return [
        type(e)(**{**{f: getattr(e, f) for f in e.__struct_fields__}, "seq": seq})
        for seq, e in enumerate(events)
    ]


def _first_breach(events: list[Event]) -> str | None:
    """``line N: <rule>`` of the first event the append-time check refuses, if any."""
    for line, event in enumerate(events, start=1):
        try:
            validate_event_shape(event)
        except EventValidationError as exc:
            return f"line {line}: {exc}"
    return None


@settings(max_examples=300)
@given(st.lists(_event, max_size=8))
def test_the_load_refuses_exactly_what_the_append_check_refuses(events):
    log = _numbered(events)
    lines = [encode_event(e) for e in log]
    breach = _first_breach(log)
    body = b"".join(line + b"\n" for line in lines)
    for decode in (
        lambda: decode_events(lines),
        lambda: decode_event_lines(body, line_count=len(lines), first_line=1),
    ):
        if breach is None:
            assert decode() == log
        else:
            with pytest.raises(LogCorruptError) as caught:
                decode()
            assert str(caught.value) == breach


def test_a_result_with_a_text_block_where_its_tool_result_block_belongs_is_refused():
    wrong = ToolResultEvent(
        seq=0,
        time=0,
        data=ToolResult(turn=1, step=1, message=_message("tool", [TextBlock(text="t")])),
        surface_op="append",
    )
    with pytest.raises(LogCorruptError, match=r"line 1: .*exactly one tool-result block"):
        decode_events([encode_event(wrong)])
