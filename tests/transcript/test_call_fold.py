"""A reply's calls past ``tools.max_calls_per_reply`` are ONE item in the person-facing
transcript (``dsh.transcript.call_fold``): over random logs written as the agent writes them
(replies of any size and limit, callIds repeated within and across replies, calls that ran and
failed, a log cut anywhere by a crash), every call that ran keeps its card and its own result,
every call past the limit is in exactly one fold of its reply, no result of one shows, and the
plain text is the items rendered."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.events import (
    AssistantMessage,
    AssistantMessageEvent,
    Event,
    Message,
    ModelSource,
    TextBlock,
    ToolCall,
    ToolCallBlock,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResult,
    ToolResultBlock,
    ToolResultEvent,
    ToolSource,
    UserMessageEvent,
    UserSource,
)
from dsh.transcript import (
    OverLimitItem,
    ToolCallItem,
    ToolResultItem,
    transcript_blocks,
    transcript_items,
)
from dsh.transcript.call_fold import calls_by_name, over_limit_note, over_limit_text
from dsh.transcript.find import find_in_transcript
from dsh.transcript.text import render_item


@dataclass(frozen=True)
class Reply:
    calls: tuple[ToolCallBlock, ...]
    limit: int  # 0: no limit
    failed: tuple[bool, ...]  # per call that ran: its result is an error

    @property
    def runs(self) -> int:
        return len(self.calls) if self.limit == 0 else min(self.limit, len(self.calls))


_call = st.builds(
    ToolCallBlock,
    id=st.sampled_from(["call_0", "call_1", "call_2"]),
    name=st.sampled_from(["bash", "read_file", "list_dir"]),
    arguments=st.sampled_from(['{"command": "ls"}', '{"path": "a"}', "{}"]),
)


@st.composite
def _reply(draw: st.DrawFn) -> Reply:
    calls = tuple(draw(st.lists(_call, min_size=1, max_size=9)))
    limit = draw(st.integers(0, len(calls) + 1))
    failed = tuple(draw(st.lists(st.booleans(), min_size=len(calls), max_size=len(calls))))
    return Reply(calls, limit, failed)


def _message(role: str, content: tuple[object, ...], source: object) -> Message:
    return Message(id="m", role=role, content=content, source=source)  # type: ignore[arg-type]


def _result(call: ToolCallBlock, text: str, code: str | None) -> ToolResult:
    block = ToolResultBlock(
        tool_call_id=call.id, content=(TextBlock(text=text),), is_error=bool(code)
    )
    error = ToolErrorInfo(name=call.name, code=code) if code else None
    message = _message("tool", (block,), ToolSource(call_id=call.id))
    return ToolResult(turn=1, step=1, message=message, error=error)


@dataclass
class Written:
    """A log as the agent writes it, and what each call of it is."""

    events: list[Event]
    ran_calls: list[int]  # seqs of the tool/calls that ran
    ran_results: dict[int, int]  # result seq -> its call's seq
    unrun: dict[int, tuple[Reply, int]]  # seq of a reply's first unrun tool/call -> the reply


def write(replies: list[Reply]) -> Written:
    out = Written([], [], {}, {})

    def add(event: Event) -> int:
        out.events.append(event)
        return event.seq

    def seq() -> int:
        return len(out.events)

    for n, reply in enumerate(replies):
        prompt = _message("user", (TextBlock(text=f"p{n}"),), UserSource())
        add(UserMessageEvent(seq=seq(), time=0, data=prompt, surface_op="append"))
        message = _message("assistant", reply.calls, ModelSource(provider="p", model="m"))
        data = AssistantMessage(turn=1, step=1, message=message)
        add(AssistantMessageEvent(seq=seq(), time=0, data=data, surface_op="append"))
        runs = reply.runs
        call_seqs = []
        for index, call in enumerate(reply.calls):
            mark = 0 if index < runs else runs
            fields = {"call_id": call.id, "name": call.name, "arguments": call.arguments}
            payload = ToolCall(turn=1, step=1, over_limit=mark, **fields)
            call_seqs.append(add(ToolCallEvent(seq=seq(), time=0, data=payload)))
        out.ran_calls += call_seqs[:runs]
        open_cards: dict[str, list[int]] = {}
        for call, at in zip(reply.calls[:runs], call_seqs, strict=False):
            open_cards.setdefault(call.id, []).append(at)
        if runs < len(reply.calls):
            out.unrun[call_seqs[runs]] = (reply, runs)
        for index, call in enumerate(reply.calls):
            if index < runs:
                code = "TOOL_ERROR" if reply.failed[index] else None
                result = _result(call, f"out {n}.{index}", code)
            else:
                result = _result(call, "[TOO_MANY_CALLS] not run", "TOO_MANY_CALLS")
            at = add(ToolResultEvent(seq=seq(), time=0, data=result, surface_op="append"))
            if index < runs:  # it joins the nearest earlier open card of its id
                out.ran_results[at] = open_cards[call.id].pop()
    return out


@settings(max_examples=300)
@given(st.lists(_reply(), min_size=1, max_size=4), st.data())
def test_the_fold_keeps_every_call_that_ran_and_accounts_for_every_one_that_did_not(
    replies: list[Reply], data: st.DataObject
) -> None:
    written = write(replies)
    cut = data.draw(st.integers(0, len(written.events)), label="crash after")
    log = written.events[:cut]
    items = list(transcript_items(log))
    cards = [item.seq for item in items if isinstance(item, ToolCallItem)]
    assert cards == [s for s in written.ran_calls if s < cut]  # every call that ran: its card
    results = {item.seq: item.card_seq for item in items if isinstance(item, ToolResultItem)}
    assert results == {r: c for r, c in written.ran_results.items() if r < cut}  # its own result
    folds = [item for item in items if isinstance(item, OverLimitItem)]
    expected = [(seq, entry) for seq, entry in written.unrun.items() if seq < cut]
    assert len(folds) == len(expected)
    for fold, (seq, (reply, runs)) in zip(folds, expected, strict=True):
        assert (fold.seq, fold.asked, fold.limit) == (seq, len(reply.calls), runs)
        unrun = [(c.call_id, c.name, c.arguments) for c in fold.calls]
        assert unrun == [(c.id, c.name, c.arguments) for c in reply.calls[runs:]]
    assert sum(len(fold.calls) for fold in folds) == sum(
        len(reply.calls) - runs for _, (reply, runs) in expected
    )
    # the plain text (``dsh sessions show``) is the items rendered, and shows no unrun result
    rendered = [text for text in map(render_item, items) if text is not None]
    assert transcript_blocks(log) == rendered
    assert not any("TOO_MANY_CALLS" in text for text in rendered)


def test_a_300_call_reply_is_its_32_cards_and_one_line_naming_the_rest():
    calls = tuple(
        ToolCallBlock(id=f"call_{n}", name="bash" if n < 232 else "read_file", arguments="{}")
        for n in range(300)
    )
    log = write([Reply(calls, 32, (False,) * 300)]).events
    items = list(transcript_items(log))
    assert sum(isinstance(item, ToolCallItem) for item in items) == 32
    (fold,) = [item for item in items if isinstance(item, OverLimitItem)]
    assert over_limit_note(fold.asked, fold.limit) == (
        "268 more calls not run: the reply asked for 300, at most 32 run per reply "
        "(tools.max_calls_per_reply)"
    )
    assert calls_by_name([c.name for c in fold.calls]) == "bash ×200, read_file ×68"
    text = transcript_blocks(log)
    assert len(text) == 1 + 1 + 1 + 32  # prompt, reply, the fold, the results that ran
    assert text[2] == f"({over_limit_text(fold)})"
    (hit,) = find_in_transcript(log, "read_file ×68")  # a find goes to the one card
    assert (hit.seq, hit.card_seq, hit.kind) == (fold.seq, fold.seq, "tool-call")
    assert [h.seq for h in find_in_transcript(log, "TOO_MANY_CALLS")] == []
    assert over_limit_note(2, 1) == (
        "1 more call not run: the reply asked for 2, at most 1 run per reply "
        "(tools.max_calls_per_reply)"
    )
