"""Property tests of the fold, the store round trip, tool pairing and replace validation.

Sessions are generated op by op through the public API (so each is valid by construction): chat
turns, tool turns with k parallel calls answered by k results, empty assistant replies,
checkpoint replaces over spans of current nodes, and one-for-one tool-result prunes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dsh.errors import EventValidationError, SurfaceError
from dsh.events import (
    AssistantMessage,
    ReplaceOp,
    ToolResult,
    ToolResultEvent,
    Usage,
    encode_event,
)
from dsh.store import JsonlStore, MemoryStore
from dsh.store.integrity import seal
from dsh.surface import Session, fold_surface
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    checkpoint_message,
    new_session,
    replace_with_checkpoint,
    surface_state,
    tool_call_block,
    tool_result_message,
    user_message,
)

PROPERTY = settings(max_examples=100, deadline=None)

TEXT = st.text(alphabet='abc xyz\n"{}é', max_size=40)
USAGE = st.none() | st.builds(
    Usage,
    input_tokens=st.integers(0, 5000),
    output_tokens=st.integers(0, 500),
    cache_read_tokens=st.none() | st.integers(0, 5000),
)


def _span(data: st.DataObject, session: Session, *, balanced: bool) -> tuple[int, int] | None:
    """Endpoints (start seq, end seq) of a span of current nodes, start not after end; with
    ``balanced`` both cuts leave no tool call open. None if there is no such span."""
    nodes = session.nodes
    if balanced:
        starts = [i for i, s in enumerate(nodes) if session.tool_pairing_balanced_before(s)]
        ends = [i for i, s in enumerate(nodes) if session.tool_pairing_balanced_after(s)]
    else:
        starts = ends = list(range(len(nodes)))
    pairs = [(i, j) for i in starts for j in ends if i <= j]
    if not pairs:
        return None
    i, j = data.draw(st.sampled_from(pairs), label="span")
    return nodes[i], nodes[j]


def _open_calls(session: Session, first: int, last: int) -> list[str] | None:
    """The call ids the current nodes ``first``..``last`` (positions) leave open for results
    after them, or None when they answer a call made before them (then no one node can stand
    in for them without splitting a call from its result)."""
    opened: list[str] = []
    for seq in session.nodes[first : last + 1]:
        message = session.node_message(seq)
        if message is None:
            continue
        if message.role == "assistant":
            opened.extend(call.id for call in message.tool_calls())
        elif message.role == "tool":
            call_id = message.content[0].tool_call_id  # type: ignore[union-attr]
            if call_id not in opened:
                return None
            opened.remove(call_id)
    return opened


def _editable_span(data: st.DataObject, session: Session) -> tuple[int, int, list[str]] | None:
    """A span of current nodes that answers no earlier call, with the calls it leaves open: an
    assistant message carrying those calls may replace it (a regenerated message)."""
    nodes = session.nodes
    spans = [
        (i, j, opened)
        for i in range(len(nodes))
        for j in range(i, len(nodes))
        if (opened := _open_calls(session, i, j)) is not None
    ]
    if not spans:
        return None
    i, j, opened = data.draw(st.sampled_from(spans), label="editable span")
    return nodes[i], nodes[j], opened


def build_session(data: st.DataObject, session: Session, *, balanced: bool = True) -> Session:
    """Append a random valid history to ``session``. Checkpoints cut at balanced points, as
    compaction does; with ``balanced`` so do edits (an assistant message replacing a span),
    otherwise an edit may cover any span that answers no earlier call, and carries the calls
    the span leaves open, so their results still meet them."""
    ops = data.draw(
        st.lists(
            st.sampled_from(["chat", "tools", "empty", "checkpoint", "prune", "edit"]),
            min_size=1,
            max_size=10,
        ),
        label="ops",
    )
    for op in ops:
        if op == "chat":
            append_chat_turn(session, data.draw(TEXT), data.draw(TEXT), usage=data.draw(USAGE))
        elif op == "empty":
            append_chat_turn(session, data.draw(TEXT), "", usage=data.draw(USAGE))
        elif op == "tools":
            k = data.draw(st.integers(1, 3), label="calls")
            calls = [("tool", data.draw(TEXT), data.draw(TEXT)) for _ in range(k)]
            append_tool_turn(session, data.draw(TEXT), calls, data.draw(TEXT))
        elif op == "checkpoint":
            span = _span(data, session, balanced=True)
            if span is not None:
                log_only = [e.seq for e in session.events if not hasattr(e, "surface_op")]
                extra = (
                    data.draw(st.lists(st.sampled_from(log_only), unique=True, max_size=2))
                    if log_only
                    else []
                )
                replace_with_checkpoint(session, *span, data.draw(TEXT), extra_sources=extra)
        elif op == "prune":
            results = [s for s in session.nodes if isinstance(session.events[s], ToolResultEvent)]
            if results:
                target = data.draw(st.sampled_from(results), label="prune")
                call_id = session.events[target].data.message.content[0].tool_call_id
                session.append(
                    ToolResult(turn=0, step=0, message=tool_result_message(call_id, "[pruned]")),
                    surface_op=ReplaceOp(start=target, end=target),
                    source_event_seqs=[target],
                )
        elif op == "edit":
            edit = _editable_span(data, session) if not balanced else None
            span = edit[:2] if edit is not None else _span(data, session, balanced=True)
            if span is not None:
                first = session.surface.position(span[0])
                last = session.surface.position(span[1])
                calls = [tool_call_block(call_id) for call_id in (edit[2] if edit else ())]
                message = assistant_message(data.draw(TEXT), tool_calls=calls)
                session.append(
                    AssistantMessage(turn=0, step=0, message=message),
                    surface_op=ReplaceOp(start=span[0], end=span[1]),
                    source_event_seqs=session.nodes[first : last + 1],
                )
    return session


@PROPERTY
@given(st.data())
def test_stored_log_folds_to_the_live_surface(data):
    with tempfile.TemporaryDirectory() as home:
        store = JsonlStore(Path(home))
        with new_session(store) as live:
            build_session(data, live, balanced=data.draw(st.booleans(), label="balanced"))
        with Session.open(store, live.id) as loaded:
            assert loaded.nodes == live.nodes
            assert loaded.replacements == live.replacements
            assert loaded.replace_generation == live.replace_generation == len(live.replacements)
            assert fold_surface(loaded.events) == (live.nodes, live.replacements)
            assert loaded.derive_messages() == live.derive_messages()
            assert loaded.measure() == live.measure()


@PROPERTY
@given(st.data())
def test_store_round_trip_gives_identical_events_and_identical_bytes_on_resave(data):
    with tempfile.TemporaryDirectory() as home:
        store = JsonlStore(Path(home))
        with new_session(store) as live:
            build_session(data, live, balanced=False)
        stored = store.log_path(live.id).read_bytes().split(b"\n")[1:-1]
        loaded = store.open(live.id)
        assert list(loaded.events) == list(live.events)
        # each stored line is the event's canonical bytes plus the store's CRC seal
        assert [seal(encode_event(e)) for e in loaded.events] == stored
        # Re-saving the loaded events into another session writes the same bytes again.
        copy = store.create(cwd="/copy", seed=loaded.events)
        copy.close()
        loaded.close()
        assert store.log_path(copy.id).read_bytes().split(b"\n")[1:-1] == stored


@PROPERTY
@given(st.data())
def test_pairing_balance_is_never_negative_and_closes_at_zero_on_valid_logs(data):
    store = MemoryStore()
    live = build_session(data, new_session(store), balanced=True)
    live.close()
    reloaded = Session.open(store, live.id)
    for session in (live, reloaded):  # incremental (cached) and freshly folded agree
        balances = [session.surface.pairing_balance_after(i) for i in range(len(session.nodes))]
        assert all(b >= 0 for b in balances)
        if balances:
            assert balances[-1] == 0
            assert session.tool_pairing_balanced_after(session.nodes[-1])
    assert [reloaded.surface.pairing_balance_after(i) for i in range(len(live.nodes))] == [
        live.surface.pairing_balance_after(i) for i in range(len(live.nodes))
    ]


INVALID_KINDS = {  # kind → what the error must say
    "shadowed endpoint": "is not a current surface node",
    "log-only endpoint": "is not a current surface node",
    "future endpoint": "is not a current surface node",
    "start after end": "comes after end",
    "source missing a shadowed seq": "miss shadowed node",
    "source not earlier": "must be earlier seqs",
    "duplicate source": "sourceEventSeqs repeat",
}


def _invalid_replace(data: st.DataObject, session: Session, kind: str):
    """(op, sources) of a replace that breaks exactly the rule ``kind`` (its sources are
    otherwise valid), or None if this session offers no way to break it."""
    next_seq = len(session.events)
    span = _span(data, session, balanced=False)
    if span is None:
        return None
    first, last = session.surface.position(span[0]), session.surface.position(span[1])
    covered = session.nodes[first : last + 1]
    if kind.endswith("endpoint"):
        if kind == "shadowed endpoint":
            if not session.replacements:  # make something shadowed first
                whole = _span(data, session, balanced=True)
                assert whole is not None  # a session has a balanced span once it has a node
                replace_with_checkpoint(session, *whole)
                span = _span(data, session, balanced=False)
                assert span is not None
                first = session.surface.position(span[0])
                last = session.surface.position(span[1])
                covered = session.nodes[first : last + 1]
                next_seq = len(session.events)
            pool = [s for r in session.replacements for s in r.shadowed_seqs]
        elif kind == "log-only endpoint":
            pool = [e.seq for e in session.events if not hasattr(e, "surface_op")]
        else:
            pool = list(range(next_seq, next_seq + 5))
        if not pool:
            return None
        bad = data.draw(st.sampled_from(pool), label="bad endpoint")
        op = data.draw(
            st.sampled_from([ReplaceOp(start=bad, end=span[1]), ReplaceOp(start=span[0], end=bad)])
        )
        return op, sorted({*covered, bad} if bad < next_seq else set(covered))
    if kind == "start after end":
        if first == last:
            return None
        return ReplaceOp(start=span[1], end=span[0]), covered
    op = ReplaceOp(start=span[0], end=span[1])
    if kind == "source missing a shadowed seq":
        dropped = data.draw(st.sampled_from(covered), label="dropped")
        # seq 0 is the first turn/start, never a node: it keeps the list non-empty.
        return op, sorted({0, *covered} - {dropped})
    if kind == "source not earlier":
        return op, [*covered, data.draw(st.integers(next_seq, next_seq + 3))]
    return op, [*covered, data.draw(st.sampled_from(covered))]  # duplicate source


@pytest.mark.parametrize("kind", sorted(INVALID_KINDS))
@PROPERTY
@given(data=st.data())
def test_invalid_replaces_are_rejected_and_leave_the_session_unchanged(kind, data):
    store = MemoryStore()
    session = build_session(data, new_session(store), balanced=data.draw(st.booleans()))
    invalid = _invalid_replace(data, session, kind)
    assume(invalid is not None)
    op, sources = invalid
    payload = data.draw(
        st.sampled_from(
            [
                checkpoint_message("bad", "cmp-bad"),
                AssistantMessage(turn=0, step=0, message=assistant_message("bad")),
            ]
        ),
        label="payload",
    )
    before = surface_state(session)
    events = list(session.events)
    stored = list(store.lines[session.id])
    messages = session.derive_messages()

    with pytest.raises((SurfaceError, EventValidationError), match=INVALID_KINDS[kind]):
        session.append(payload, surface_op=op, source_event_seqs=sources)

    assert surface_state(session) == before
    assert list(session.events) == events
    assert store.lines[session.id] == stored
    assert session.derive_messages() == messages
    assert fold_surface(session.events) == (session.nodes, session.replacements)
    session.append(user_message("after the refusal"))  # still appendable
