"""``Session.measure`` keeps its figures incrementally; each must equal a fresh computation.

Random sessions (chat and tool turns with or without usage, header changes, checkpoint replaces,
prunes, and batches holding two replaces) are measured after every operation and compared with
a from-scratch computation over the log. A complexity test pins that a measure after one more
append prices O(changed) nodes, not the whole surface.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.events import (
    AssistantMessage,
    AssistantMessageEvent,
    ReplaceOp,
    RequestConfig,
    RequestHeader,
    RequestHeaderBody,
    RequestHeaderEvent,
    Usage,
    model_message,
)
from dsh.store import MemoryStore
from dsh.surface import Draft, Session, fold_surface, message_tokens
from dsh.surface import session as session_module
from dsh.surface.calibration import MIN_ESTIMATE
from dsh.surface.tokens import system_tokens, tools_tokens
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    checkpoint_message,
    heuristic_price,
    new_session,
    replace_with_checkpoint,
    user_message,
)
from tests.surface.test_properties import TEXT, USAGE, _span

PROPERTY = settings(max_examples=150, deadline=None)


def _fresh_figures(session: Session) -> tuple[int, int] | None:
    """The newest appended reply with usage, not interrupted: its reported count and the
    heuristic of the request it answered (the log folded up to it, the header before it)."""
    events = session.events
    anchor = None
    for event in events:
        if (
            isinstance(event, AssistantMessageEvent)
            and event.surface_op == "append"
            and event.data.usage is not None
            and not event.data.interrupted
        ):
            anchor = event
    if anchor is None or anchor.data.usage is None:
        return None
    nodes, _ = fold_surface(events[: anchor.seq])
    headers = [e for e in events[: anchor.seq] if isinstance(e, RequestHeaderEvent)]
    fixed = 0
    if headers:
        body = headers[-1].data.header
        fixed = system_tokens(body.system) + tools_tokens(body.tools)
    return anchor.data.usage.request_tokens(), fixed + heuristic_price(session, nodes)


def fresh_calibration(session: Session) -> tuple[int, int] | None:
    """The calibration from scratch (docs/architecture.md, "Token accounting"), as the bounded
    ratio's (numerator, denominator); none under ``MIN_ESTIMATE`` tokens or for a ratio outside
    0.5-8."""
    figures = _fresh_figures(session)
    if figures is None:
        return None
    reported, estimated = figures
    if estimated < MIN_ESTIMATE or 2 * reported < estimated or reported > 8 * estimated:
        return None
    return reported, estimated


def fresh_credible(session: Session) -> bool:
    """Whether the anchor's count can be its request's size, from scratch: positive, and within
    0.5-8 of the heuristic of its request unless that is under ``MIN_ESTIMATE`` tokens."""
    figures = _fresh_figures(session)
    if figures is None or figures[0] <= 0:
        return False
    reported, estimated = figures
    return estimated < MIN_ESTIMATE or estimated <= 2 * reported <= 16 * estimated


def fresh_measure(session: Session) -> tuple[int, bool]:
    """``measure()`` from scratch (docs/architecture.md, "Token accounting"): fold the log, find the
    anchor, price what it does not cover, scaled by the calibration (rounded up)."""
    events = session.events
    ratio = fresh_calibration(session) or (1, 1)

    def scaled(tokens: int) -> int:
        return -((-tokens * ratio[0]) // ratio[1])

    nodes, _ = fold_surface(events)
    header = anchor = None
    last_replace = -1
    for event in events:
        if isinstance(event, RequestHeaderEvent):
            header = event
        elif getattr(event, "surface_op", None) is not None:
            if isinstance(event.surface_op, ReplaceOp):  # type: ignore[union-attr]
                last_replace = event.seq
            elif (
                isinstance(event, AssistantMessageEvent)
                and event.data.usage is not None
                and not event.data.interrupted
            ):
                anchor = event
    if (
        anchor is not None
        and fresh_credible(session)
        and anchor.seq > last_replace
        and (header is None or header.seq < anchor.seq)
        and anchor.seq in nodes
    ):
        later = nodes[nodes.index(anchor.seq) :]
        return anchor.data.usage.request_tokens() + scaled(heuristic_price(session, later)), True  # type: ignore[union-attr]
    fixed = 0
    if header is not None:
        body = header.data.header
        fixed = system_tokens(body.system) + tools_tokens(body.tools)
    return scaled(fixed + heuristic_price(session, nodes)), False


def _header(system: str) -> RequestHeader:
    return RequestHeader(
        header=RequestHeaderBody(
            config=RequestConfig(provider="fake", model="fake-model"),
            system=system,
            tools=({"name": "ls"},),
        ),
        reason="initial",
    )


def _step(data: st.DataObject, session: Session, op: str) -> None:
    if op == "chat":
        append_chat_turn(session, data.draw(TEXT), data.draw(TEXT), usage=data.draw(USAGE))
    elif op == "tools":
        calls = [
            ("tool", data.draw(TEXT), data.draw(TEXT)) for _ in range(data.draw(st.integers(1, 3)))
        ]
        append_tool_turn(session, data.draw(TEXT), calls, data.draw(TEXT))
    elif op == "header":
        session.append(_header(data.draw(TEXT)))
    elif op == "user":
        session.append(user_message(data.draw(TEXT)))
    elif op == "checkpoint":
        span = _span(data, session, balanced=True)
        if span is not None:
            replace_with_checkpoint(session, *span, data.draw(TEXT))
    elif op == "two-replaces":  # one batch: a replace, then a replace of the node it made
        span = _span(data, session, balanced=True)
        if span is not None:
            first, last = (session.surface.position(s) for s in span)
            shadowed = session.nodes[first : last + 1]
            made = len(session.events)
            session.append_many(
                [
                    Draft(
                        checkpoint_message(data.draw(TEXT), "c1"),
                        ReplaceOp(start=span[0], end=span[1]),
                        tuple(shadowed),
                    ),
                    Draft(
                        AssistantMessage(
                            turn=0, step=0, message=assistant_message(data.draw(TEXT))
                        ),
                        ReplaceOp(start=made, end=made),
                        (made,),
                    ),
                ]
            )


@PROPERTY
@given(st.data())
def test_every_measure_equals_a_fresh_computation(data):
    ops = st.sampled_from(["chat", "tools", "header", "user", "checkpoint", "two-replaces"])
    store = MemoryStore()
    with new_session(store) as session:
        for op in data.draw(st.lists(ops, min_size=1, max_size=14), label="ops"):
            _step(data, session, op)
            if data.draw(st.booleans(), label="measure now"):  # caches start at different times
                measured = session.measure()
                assert (measured.total_tokens, measured.anchored) == fresh_measure(session)
        measured = session.measure()
        assert (measured.total_tokens, measured.anchored) == fresh_measure(session)
    reopened = Session.open(store, session.id)  # what loading remembers, not appending
    assert reopened.measure() == measured


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = session_module.message_tokens

    def counted(message):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(message)

    monkeypatch.setattr(session_module, "message_tokens", counted)
    return calls


def test_measure_prices_only_changed_nodes_unanchored(monkeypatch):
    session = new_session(MemoryStore())
    session.append(_header("sys"))
    for i in range(300):
        append_chat_turn(session, f"question {i}", f"answer {i}")
    calls = _counting(monkeypatch)
    session.measure()
    assert len(calls) == 600  # the first unanchored measure prices every node once
    calls.clear()
    append_chat_turn(session, "one more", "reply")
    replace_with_checkpoint(session, session.nodes[0], session.nodes[9])
    session.measure()
    assert len(calls) == 3  # two appended nodes and the checkpoint; shadowed prices are cached
    assert session.measure().total_tokens == fresh_measure(session)[0]


def test_anchored_measure_prices_only_nodes_after_the_anchor(monkeypatch):
    """The first measure prices every node once (the node sum the calibration reads); from
    then on an anchored measure prices only what was appended, whatever the surface's size."""
    session = new_session(MemoryStore())
    for i in range(300):
        append_chat_turn(session, f"question {i}", f"answer {i}")
    append_chat_turn(session, "last", "reply", usage=Usage(input_tokens=9000, output_tokens=5))
    session.append(user_message("next"))
    calls = _counting(monkeypatch)
    session.measure()
    assert len(calls) == 603
    calls.clear()
    session.append(user_message("one more"))
    measured = session.measure()
    assert measured.anchored and len(calls) == 1  # the new message; the calibration is kept
    later = sum(
        message_tokens(model_message(session.events[s]))  # type: ignore[arg-type]
        for s in session.nodes[-3:]  # the anchor and the two user messages after it
    )
    assert measured.calibration is not None
    assert measured.total_tokens == 9000 + measured.calibration.scale(later)
    assert measured.total_tokens == fresh_measure(session)[0]
