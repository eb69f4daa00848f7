"""The heuristic calibrated by the provider's count (docs/architecture.md, "Token accounting").

When the provider reported the size of a request dsh also priced, ``measure()`` scales what the
provider has not counted by ``reported / estimated``, rounded up; without such a report, when
the request was too small to go by, or for a ratio outside 0.5–8 (a count gone wrong), it is
the figure it always was. The
property test pins that the calibration and the measure kept as events commit equal a
from-scratch computation over the log, live, measured at any moment, and reopened.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import event, given, settings
from hypothesis import strategies as st

from dsh.events import AssistantMessage, Usage
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.surface import session as session_module
from dsh.surface.calibration import (
    MAX_RATIO,
    MIN_ESTIMATE,
    MIN_RATIO,
    Calibration,
    calibration,
    calibration_note,
)
from dsh.surface.tokens import system_tokens, tools_tokens
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    heuristic_price,
    new_session,
    replace_with_checkpoint,
    user_message,
)
from tests.surface.test_measure_cache import _header, fresh_calibration, fresh_measure
from tests.surface.test_properties import _span

# ---- the ratio ------------------------------------------------------------------------------


def test_a_ratio_of_one_scales_nothing():
    same = Calibration(anchor_seq=3, reported=2_000, estimated=2_000)
    assert [same.scale(n) for n in (0, 1, 7, 12_345)] == [0, 1, 7, 12_345]
    assert calibration_note(same) == ""


def test_the_ratio_scales_and_rounds_up():
    more = Calibration(anchor_seq=3, reported=1_300, estimated=1_000)
    assert more.ratio == Fraction(13, 10)
    assert more.scale(1_000) == 1_300
    assert more.scale(1) == 2  # 1.3, rounded up
    assert more.scale(-10) == -13
    assert calibration_note(more) == (
        "dsh's estimate ×1.30, as the server counted its last request"
    )


def test_a_ratio_no_tokenizer_gives_calibrates_nothing():
    """Chinese counts about 6× the heuristic, so up to 8 is a tokenizer; beyond, or under half
    (more than eight characters a token, or a stand-in server's fixed figure), the count went
    wrong and must not make dsh believe there is more (or less) room than its heuristic says."""
    assert calibration(0, 6_300, 1_000) == Calibration(0, 6_300, 1_000)
    assert calibration(0, 8_000, 1_000) is not None and calibration(0, 500, 1_000) is not None
    assert calibration(0, 8_001, 1_000) is None
    assert calibration(0, 499, 1_000) is None
    assert calibration(0, 0, 5_000) is None
    assert (Fraction(1, 2), 8) == (MIN_RATIO, MAX_RATIO)


def test_a_small_estimate_calibrates_nothing():
    assert calibration(5, 1_300, MIN_ESTIMATE - 1) is None
    assert calibration(5, 1_300, MIN_ESTIMATE) == Calibration(5, 1_300, MIN_ESTIMATE)


# ---- the measure ----------------------------------------------------------------------------

CODE = "".join(f"def f_{n}(x):\n    return x * {n} + {{'k': [{n}]}}\n" for n in range(120))


def _estimate(session: Session) -> int:
    """The heuristic of the request the next reply answers: header and every node."""
    header = session.request_header
    fixed = 0 if header is None else system_tokens(header.system) + tools_tokens(header.tools)
    return fixed + heuristic_price(session, session.nodes)


def _session_with_a_counted_request(store: MemoryStore, factor: Fraction) -> tuple[Session, int]:
    """A header and a prompt carrying code; the reply's usage is ``factor`` × dsh's estimate
    of the request it answered. Returns the session and that estimate."""
    session = new_session(store)
    session.append(_header("you are a coding agent"))
    append_chat_turn(session, "review this:\n" + CODE, "looks fine")
    estimated = _estimate(session)
    session.append(
        AssistantMessage(
            turn=1,
            step=2,
            message=assistant_message("and one more thing"),
            usage=Usage(input_tokens=int(estimated * factor), output_tokens=5),
        )
    )
    return session, estimated


def test_without_a_report_the_measure_is_the_heuristic():
    session = new_session(MemoryStore())
    session.append(_header("you are a coding agent"))
    append_chat_turn(session, "review this:\n" + CODE, "looks fine")
    measured = session.measure()
    assert measured.calibration is None and not measured.anchored
    assert measured.total_tokens == _estimate(session) > MIN_ESTIMATE
    assert measured.scale(1_000) == 1_000


def test_what_came_after_the_counted_request_is_scaled_by_its_ratio():
    store = MemoryStore()
    session, estimated = _session_with_a_counted_request(store, Fraction(13, 10))
    reply = len(session.events) - 1
    session.append(user_message("and this file:\n" + CODE))
    measured = session.measure()
    assert measured.anchored
    assert measured.calibration == Calibration(reply, estimated * 13 // 10, estimated)
    later = heuristic_price(session, session.nodes[-2:])  # the reply and the new prompt
    uncalibrated = estimated * 13 // 10 + later
    assert measured.total_tokens == estimated * 13 // 10 + measured.calibration.scale(later)
    assert measured.total_tokens - uncalibrated == measured.calibration.scale(later) - later > 300
    assert measured.scale(1_000) == 1_300  # what a step is about to log, scaled alike
    assert Session.open(store, session.id).measure() == measured


def test_after_a_replace_the_whole_heuristic_is_scaled_by_the_last_ratio():
    """A checkpoint shadows part of the counted request: the provider's count no longer
    applies, so the heuristic of the whole next request is scaled; the ratio is still the one
    of the request as it was sent."""
    store = MemoryStore()
    session, estimated = _session_with_a_counted_request(store, Fraction(13, 10))
    replace_with_checkpoint(session, session.nodes[0], session.nodes[1], "summary of the review")
    measured = session.measure()
    assert not measured.anchored
    assert measured.calibration is not None
    assert measured.calibration.estimated == estimated
    assert measured.total_tokens == measured.calibration.scale(_estimate(session))
    assert Session.open(store, session.id).measure() == measured


def test_a_request_too_small_to_go_by_leaves_the_measure_as_it_was():
    session = new_session(MemoryStore())
    append_chat_turn(session, "hello", "hi", usage=Usage(input_tokens=900, output_tokens=2))
    session.append(user_message("x" * 4_000))
    measured = session.measure()
    assert measured.anchored and measured.calibration is None
    assert measured.total_tokens == 900 + heuristic_price(session, session.nodes[-2:])


def test_the_calibration_is_worked_out_once_per_counted_request(monkeypatch):
    session, _ = _session_with_a_counted_request(MemoryStore(), Fraction(13, 10))
    worked: list[int] = []
    real = session_module.Session._request_estimate

    def counted(self, anchor):  # type: ignore[no-untyped-def]
        worked.append(anchor.seq)
        return real(self, anchor)

    monkeypatch.setattr(session_module.Session, "_request_estimate", counted)
    for n in range(5):
        session.append(user_message(f"note {n}"))
        session.measure()
    assert len(worked) == 1
    append_chat_turn(session, "again", "ok", usage=Usage(input_tokens=3_000, output_tokens=1))
    session.measure()
    session.measure()
    assert len(worked) == 2


# ---- the property ---------------------------------------------------------------------------

PROPERTY = settings(max_examples=120, deadline=None)
BIG = st.builds(
    lambda piece, times: piece * times,
    st.text(alphabet='abc xyz\n"{}é', min_size=1, max_size=8),
    st.integers(0, 400),
)
COUNTED = st.builds(
    Usage,
    input_tokens=st.integers(0, 20_000),
    output_tokens=st.integers(0, 50),
    cache_read_tokens=st.none() | st.integers(0, 3_000),
)
USAGE = st.one_of(
    st.none(), COUNTED, COUNTED, COUNTED
)  # a reply without usage a quarter of the time


def _step(data: st.DataObject, session: Session, op: str) -> None:
    if op == "chat":
        append_chat_turn(session, data.draw(BIG), data.draw(BIG), usage=data.draw(USAGE))
    elif op == "tools":
        calls = [
            ("tool", data.draw(BIG), data.draw(BIG)) for _ in range(data.draw(st.integers(1, 2)))
        ]
        append_tool_turn(
            session,
            data.draw(BIG),
            calls,
            data.draw(BIG),
            usage=data.draw(USAGE),
            final_usage=data.draw(USAGE),
        )
    elif op == "header":
        session.append(_header(data.draw(BIG)))
    elif op == "user":
        session.append(user_message(data.draw(BIG)))
    elif op == "interrupted":  # counted, but cut: never the anchor
        session.append(
            AssistantMessage(
                turn=0,
                step=0,
                message=assistant_message(data.draw(BIG)),
                usage=data.draw(USAGE),
                interrupted=True,
            )
        )
    elif op == "checkpoint":
        span = _span(data, session, balanced=True)
        if span is not None:
            replace_with_checkpoint(session, *span, data.draw(BIG))


def _calibration_of(session: Session) -> tuple[int, int] | None:
    calibrated = session.measure().calibration
    return None if calibrated is None else calibrated.ratio.as_integer_ratio()


@PROPERTY
@given(st.data())
def test_every_calibrated_measure_equals_a_fresh_computation(data):
    ops = st.sampled_from(["chat", "tools", "header", "user", "interrupted", "checkpoint"])
    store = MemoryStore()
    with new_session(store) as session:
        for op in data.draw(st.lists(ops, min_size=2, max_size=12), label="ops"):
            _step(data, session, op)
            if data.draw(st.booleans(), label="measure now"):  # caches start at different times
                measured = session.measure()
                assert (measured.total_tokens, measured.anchored) == fresh_measure(session)
                assert _calibration_of(session) == _fresh_ratio(session)
        measured = session.measure()
        assert (measured.total_tokens, measured.anchored) == fresh_measure(session)
        assert _calibration_of(session) == _fresh_ratio(session)
        event("calibrated" if measured.calibration is not None else "not calibrated")
        event("anchored" if measured.anchored else "not anchored")
    reopened = Session.open(store, session.id)  # what loading remembers, not appending
    assert reopened.measure() == measured


def _fresh_ratio(session: Session) -> tuple[int, int] | None:
    fresh = fresh_calibration(session)
    return None if fresh is None else Fraction(*fresh).as_integer_ratio()


def test_a_count_no_tokenizer_gives_is_not_taken_as_the_contexts_size():
    """A server that reports ``prompt_tokens: 100`` for every request (a stand-in's fixed
    figure, or Ollama counting only what its prompt cache did not hold) made the context look
    tiny: no compaction ran while requests grew past the window. Too small a count, a huge one
    and a negative one are not the request's size: the measure is the heuristic's."""
    store = MemoryStore()
    for factor in (Fraction(1, 20), Fraction(10**6), Fraction(-1, 10)):
        session, estimated = _session_with_a_counted_request(store, factor)
        session.append(user_message("and this file:\n" + CODE))
        measured = session.measure()
        assert not measured.anchored and measured.calibration is None, factor
        assert measured.total_tokens == _estimate(session) > estimated, factor
        assert (measured.total_tokens, measured.anchored) == fresh_measure(session)
    believable, estimated = _session_with_a_counted_request(store, Fraction(1, 2))
    assert believable.measure().anchored  # half the heuristic: a tokenizer can count so
