"""``/cost``'s bills kept by a ``ContextFold`` (``session_cost_report``) equal the bills of a scan
of the whole log, every field, however the appends were split between reports (single events
and batches, compaction passes whose summaries bill other providers, provider switches, a
reopened log); the first report after opening reads the per-type index, a kept one only what was
appended; its benchmark runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent.billing import BilledTokens, CostReport, cost_report, render_cost
from dsh.agent.context_fold import ContextFold
from dsh.agent.context_report import context_report, session_cost_report
from dsh.events import Event, Usage
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.transcript.stats import session_stats
from tests.agent.context_reference import whole_log_cost_report, whole_log_report
from tests.agent.log_ops import apply_op, chat_turn, compact, log_ops
from tests.agent.test_context_fold import _FewReads
from tests.helpers import append_tool_turn, new_session


def _assert_same(kept: CostReport, fresh: CostReport) -> None:
    assert kept == fresh  # every bill, every field, in the same order
    assert kept.cost == fresh.cost
    assert render_cost(kept) == render_cost(fresh)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        st.tuples(log_ops, st.sampled_from([None, "cost", "context"])), min_size=1, max_size=24
    )
)
def test_the_kept_bills_equal_the_whole_log_bills_however_appends_were_split(ops):
    """After each step the bills (``cost``) or the context report (``context``, which also makes
    the surface's items) are asked for with one kept fold, or nothing is: the split of the
    appends between its updates. Every answer equals a scan of the whole log, and so do the
    fold's figures."""
    store = MemoryStore()
    session = new_session(store)
    live = ContextFold()
    for step, (op, ask) in enumerate(ops):
        if op[0] == "reopen":  # a new session object: the fold starts over from its index
            session.close()
            session = Session.open(store, session.id, writable=True)
        else:
            apply_op(session, op, step)
        last = step == len(ops) - 1
        if ask == "context" or last:
            assert context_report(session, fold=live) == whole_log_report(session)
        if ask == "cost" or last:
            fresh = whole_log_cost_report(session.events)
            _assert_same(session_cost_report(session, fold=live), fresh)
            _assert_same(session_cost_report(session), fresh)  # a fold made for the one report
            _assert_same(cost_report(session.events), fresh)
            assert live.stats == session_stats(session.events)
    session.close()


def test_bills_are_listed_in_the_order_of_their_first_call_after_a_reopen():
    """Bills are listed by their first logged call (a call without usage counts), so a summary
    billed before any conversation call with usage comes before them, also when the fold starts
    from the per-type index (which holds the replies apart from the summaries)."""
    store = MemoryStore()
    with new_session(store) as session:
        append_tool_turn(session)  # no usage
        compact(session, "state", Usage(input_tokens=300, output_tokens=40), "p1", "openai")
        session.append_many(
            chat_turn(session, "deepseek", Usage(input_tokens=9, output_tokens=1), "")
        )
        session.append_many(
            chat_turn(session, "scripted", Usage(input_tokens=5, output_tokens=2), "")
        )
        compact(session, "index", Usage(input_tokens=70, output_tokens=6), "p2", "deepseek")
    opened = Session.open(store, session.id)
    report = session_cost_report(opened)
    order = [(bill.provider, bill.role) for bill in report.bills]
    assert order == [
        ("fake", "conversation"),  # its calls reported no usage: listed as unreported
        ("openai", "summaries"),
        ("deepseek", "conversation"),
        ("scripted", "conversation"),
        ("deepseek", "summaries"),
    ]
    _assert_same(report, whole_log_cost_report(opened.events))


def test_billed_tokens_fed_by_type_equal_billed_tokens_fed_in_log_order():
    store = MemoryStore()
    with new_session(store) as session:
        compact_usage = Usage(input_tokens=50, output_tokens=5, cache_read_tokens=10)
        for turn in range(6):
            provider = ("deepseek", "openai")[turn % 2]
            usage = Usage(input_tokens=turn, output_tokens=1, cache_write_tokens=turn)
            session.append_many(chat_turn(session, provider, usage, "reply"))
            if turn % 3 == 2:
                compact(session, "state", compact_usage, f"p{turn}", "scripted")
        by_type = BilledTokens()
        for event in sorted(session.events, key=lambda e: (type(e).__name__, e.seq)):
            by_type.feed(event)
        _assert_same(by_type.report(), whole_log_cost_report(session.events))


def test_the_first_bills_after_opening_read_the_index_not_the_log(monkeypatch):
    store = MemoryStore()
    with new_session(store) as session:
        for turn in range(200):
            usage = Usage(input_tokens=turn, output_tokens=1)
            session.append_many(chat_turn(session, "deepseek", usage, "hi"))
        compact(session, "state", Usage(input_tokens=99, output_tokens=9), "pass")
        expected = whole_log_cost_report(session.events)
    opened = Session.open(store, session.id)
    events = _FewReads(opened.events)
    with monkeypatch.context() as patch:
        patch.setattr(Session, "events", property(lambda self: events))
        report = session_cost_report(opened)
    _assert_same(report, expected)
    assert events.reads <= 3 * len(opened.nodes) + 1  # the surface's items, the last event


@pytest.mark.parametrize("appended", [0, 1])
def test_kept_bills_read_only_what_was_appended(monkeypatch, appended):
    session = new_session(MemoryStore())
    for turn in range(50):
        append_tool_turn(session, usage=Usage(input_tokens=turn, output_tokens=2))
    fold = ContextFold().update(session)
    for _ in range(appended):
        session.append_many(
            chat_turn(session, "openai", Usage(input_tokens=1, output_tokens=1), "")
        )
    seen: list[int] = []
    real = session.events

    class _Tail(_FewReads):
        def __getitem__(self, index):  # type: ignore[no-untyped-def]
            if isinstance(index, slice):
                seen.append(len(real) - index.start)
                return real[index]
            return super().__getitem__(index)

    events = _Tail(real)
    with monkeypatch.context() as patch:
        patch.setattr(Session, "events", property(lambda self: events))
        report = session_cost_report(session, fold=fold)
    assert seen == ([6] if appended else [])  # the appended turn's events, read once
    _assert_same(report, whole_log_cost_report(real))


def test_a_fold_updated_by_an_observer_inside_a_batch_bills_the_whole_batch():
    session = new_session(MemoryStore())
    append_tool_turn(session, usage=Usage(input_tokens=10, output_tokens=2))
    folds: list[ContextFold] = []

    def observe(event: Event) -> None:
        folds.append(ContextFold().update(session))  # every one started mid-batch
        folds[0].update(session)  # and the first one kept current

    session.subscribe(observe)
    session.append_many(chat_turn(session, "deepseek", Usage(input_tokens=5, output_tokens=1), ""))
    expected = whole_log_cost_report(session.events)
    for fold in folds:
        _assert_same(session_cost_report(session, fold=fold), expected)


def test_the_benchmark_prints_each_figure_beside_the_whole_log_scan():
    """``benchmarks/cost_report.py`` on small sessions (figures are not checked: no timing
    assertions; it exits with an error if a kept figure differs from the whole log's)."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "cost_report.py"
    done = subprocess.run(
        [sys.executable, str(script), "--sizes", "300,1200", "--repeat", "3"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("load average: ") and lines[-1].startswith("load average after: ")
    for figure in ("/cost whole log", "/cost after one turn", "info after one turn"):
        row = next(line for line in lines if line.startswith(figure))
        assert row.count(" ms (") == 2 and row.endswith("x")


def test_cost_names_the_calls_that_reported_no_usage_and_counts_none_of_their_tokens():
    """A cancelled call (or one failed mid-stream) is logged without usage: ``/cost`` says how
    many such calls there were instead of silently billing fewer calls."""
    store = MemoryStore()
    with new_session(store) as session:
        usage = Usage(input_tokens=100, output_tokens=10)
        session.append_many(chat_turn(session, "deepseek", usage, "one"))
        session.append_many(chat_turn(session, "deepseek", None, "cut"))
        session.append_many(chat_turn(session, "deepseek", None, "cut again"))
        report = session_cost_report(session)
    (bill,) = report.bills
    assert (bill.calls, bill.unreported, bill.uncached, bill.output) == (1, 2, 100, 10)
    text = render_cost(report)
    assert "deepseek:m (conversation, 1 call(s))" in text
    assert "2 more call(s) reported no usage" in text
