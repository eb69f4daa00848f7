"""A replace never splits a tool call from its result (docs/architecture.md, "The surface").

Property: on a random valid session, a replace of any span of current nodes, by a checkpoint or
by an assistant message carrying any of the surface's call ids, lands iff every tool call on
the resulting surface still meets exactly its result (what every provider requires of a
request); a refused one changes nothing. The same fold loads logs, so a stored log holding such
a replace is refused too (``dsh sessions import`` among others)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from dsh.errors import SurfaceError
from dsh.events import AssistantMessage, Message, ReplaceOp
from dsh.interop.upstream_read import UpstreamFormatError, read_upstream
from dsh.interop.upstream_write import export_upstream
from dsh.store import MemoryStore
from dsh.surface import Session, fold_surface
from tests.helpers import (
    append_tool_turn,
    assistant_message,
    checkpoint_message,
    new_session,
    replace_with_checkpoint,
    surface_state,
    tool_call_block,
)
from tests.surface.test_properties import PROPERTY, _span, build_session


def _every_call_meets_its_result(messages: Sequence[Message]) -> bool:
    waiting: Counter[str] = Counter()
    for message in messages:
        if message.role == "assistant":
            waiting.update(call.id for call in message.tool_calls())
        elif message.role == "tool":
            call_id = message.content[0].tool_call_id  # type: ignore[union-attr]
            if waiting[call_id] == 0:
                return False
            waiting[call_id] -= 1
    return not +waiting


@PROPERTY
@given(st.data())
def test_a_replace_lands_iff_every_tool_call_still_meets_its_result(data):
    store = MemoryStore()
    session = build_session(data, new_session(store), balanced=data.draw(st.booleans()))
    assert _every_call_meets_its_result(session.derive_messages())
    span = _span(data, session, balanced=False)
    assume(span is not None)
    assert span is not None
    first, last = (session.surface.position(s) for s in span)
    covered = session.nodes[first : last + 1]
    call_ids = sorted({c.id for m in session.derive_messages() for c in m.tool_calls()})
    carried = data.draw(
        st.lists(st.sampled_from(call_ids), unique=True) if call_ids else st.just([])
    )
    checkpoint = checkpoint_message("summary", "cmp-p")
    regenerated = AssistantMessage(
        turn=0,
        step=0,
        message=assistant_message("again", tool_calls=[tool_call_block(i) for i in carried]),
    )
    payload = data.draw(st.sampled_from([checkpoint, regenerated]), label="payload")
    kept = [session.node_message(s) for s in session.nodes[:first]]
    after = [session.node_message(s) for s in session.nodes[last + 1 :]]
    new = payload if isinstance(payload, Message) else payload.message
    expected = _every_call_meets_its_result([m for m in (*kept, new, *after) if m is not None])
    before = surface_state(session)
    events = len(session.events)

    try:
        session.append(
            payload, surface_op=ReplaceOp(start=span[0], end=span[1]), source_event_seqs=covered
        )
    except SurfaceError as exc:
        event("refused")
        assert not expected, exc
        assert "split tool call" in str(exc)
        assert surface_state(session) == before and len(session.events) == events
        return
    event("landed")
    assert expected
    assert _every_call_meets_its_result(session.derive_messages())
    session.close()
    with Session.open(store, session.id) as loaded:
        assert fold_surface(loaded.events) == (session.nodes, session.replacements)


def test_a_checkpoint_that_ends_between_a_call_and_its_result_is_refused_live_and_on_import():
    session = new_session(MemoryStore())
    turn = append_tool_turn(session)
    events = list(session.events)
    with pytest.raises(SurfaceError, match="split tool call"):
        replace_with_checkpoint(session, turn.user, turn.assistants[0])
    assert list(session.events) == events
    # The same replace in a log another harness wrote: the import folds it and refuses it.
    data, _ = export_upstream(session.header, events)
    split = {
        "type": "user/message",
        "seq": len(events),
        "time": 0,
        "data": {
            "id": "c",
            "role": "user",
            "content": [{"type": "text", "text": "summary"}],
            "source": {"kind": "plugin", "plugin": "compact"},
        },
        "surfaceOp": {"op": "replace", "start": turn.user, "end": turn.assistants[0]},
        "sourceEventSeqs": [turn.user, turn.assistants[0]],
    }
    with pytest.raises(UpstreamFormatError, match="split tool call"):
        read_upstream(data + json.dumps(split).encode() + b"\n", name="split.jsonl")
