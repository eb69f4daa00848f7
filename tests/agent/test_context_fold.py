"""``ContextFold``: the context report kept current as the log grows equals the report computed
from the whole log, however the appends were split between reports (turns, batches, compaction
passes of every checkpoint kind, pruned results, provider switches, a reopened log); its first
update after opening reads the per-type index, not the log; its benchmark runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent.context_fold import ContextFold
from dsh.agent.context_report import ContextReport, context_report
from dsh.events import Event, Usage
from dsh.store import MemoryStore
from dsh.surface import Session
from tests.agent.context_reference import whole_log_report
from tests.agent.log_ops import apply_op, chat_turn, compact, log_ops
from tests.helpers import append_tool_turn, new_session

_route = st.sampled_from([None, ("deepseek", "deepseek-chat"), ("local", "m")])


def _fresh(session: Session, **kwargs: Any) -> ContextReport:
    report = whole_log_report(session, **kwargs)
    assert context_report(session, **kwargs) == report  # a fold made for the one report
    return report


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(log_ops, st.booleans()), min_size=1, max_size=20), _route)
def test_the_kept_report_equals_the_whole_log_report_however_appends_were_split(ops, route):
    """After each step a report is asked for or not (the split of the appends between the kept
    fold's updates); every report equals the whole log's."""
    store = MemoryStore()
    session = new_session(store)
    live = ContextFold()
    kwargs: dict[str, Any] = {"default_window": 8_000, "route": route}
    for step, (op, report) in enumerate(ops):
        if op[0] == "reopen":  # a new session object: the fold starts over from its index
            session.close()
            session = Session.open(store, session.id, writable=True)
        else:
            apply_op(session, op, step)
        if report or step == len(ops) - 1:
            kept = context_report(session, fold=live, **kwargs)
            fresh = _fresh(session, **kwargs)
            assert kept == fresh
            assert kept.public() == fresh.public()
    session.close()


def test_a_fold_updated_by_an_observer_inside_a_batch_folds_the_whole_batch():
    """An observer hears a batch's events one by one while the log already holds them all and
    the per-type index does not yet: a fold started there reads the log, not the index."""
    session = new_session(MemoryStore())
    append_tool_turn(session, usage=Usage(input_tokens=10, output_tokens=2))
    folds: list[ContextFold] = []

    def observe(event: Event) -> None:
        folds.append(ContextFold().update(session))  # every one started mid-batch
        folds[0].update(session)  # and the first one kept current

    session.subscribe(observe)
    session.append_many(chat_turn(session, "deepseek", Usage(input_tokens=5, output_tokens=1), "x"))
    expected = whole_log_report(session, default_window=1_000)
    for fold in folds:
        assert context_report(session, default_window=1_000, fold=fold) == expected


def test_a_fold_given_another_session_starts_over():
    store = MemoryStore()
    first, second = new_session(store), new_session(store)
    append_tool_turn(first, usage=Usage(input_tokens=10, output_tokens=2))
    for _ in range(3):
        second.append_many(chat_turn(second, "openai", Usage(input_tokens=7, output_tokens=1), ""))
    fold = ContextFold()
    for session in (first, second, first):
        report = context_report(session, default_window=1_000, fold=fold)
        assert report == whole_log_report(session, default_window=1_000)


class _FewReads(Sequence[Event]):
    """A log that may be indexed a few times but never scanned."""

    def __init__(self, events: Sequence[Event]) -> None:
        self._events = events
        self.reads = 0

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            raise AssertionError("the log was sliced")
        self.reads += 1
        return self._events[index]

    def __iter__(self) -> Iterator[Event]:
        raise AssertionError("the log was scanned")


def test_the_first_report_after_opening_reads_the_index_not_the_log(monkeypatch):
    store = MemoryStore()
    with new_session(store) as session:
        for turn in range(200):
            session.append_many(
                chat_turn(session, "deepseek", Usage(input_tokens=turn, output_tokens=1), "hi")
            )
        compact(session, "state", None, "pass")
        expected = whole_log_report(session, default_window=1_000)
    opened = Session.open(store, session.id)
    events = _FewReads(opened.events)
    with monkeypatch.context() as patch:
        patch.setattr(Session, "events", property(lambda self: events))
        report = context_report(opened, default_window=1_000)
    assert report == expected
    assert events.reads <= 3 * len(opened.nodes) + 1  # each node and its summary, the last event


@pytest.mark.parametrize("appended", [0, 1])
def test_a_kept_fold_reads_only_what_was_appended(monkeypatch, appended):
    session = new_session(MemoryStore())
    for _ in range(50):
        append_tool_turn(session)
    fold = ContextFold().update(session)
    for _ in range(appended):
        session.append_many(chat_turn(session, "deepseek", None, "more"))
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
        report = context_report(session, default_window=1_000, fold=fold)
    assert seen == ([6] if appended else [])  # the appended turn's events, read once
    assert events.reads == 2 * appended  # the new nodes: a prompt and a reply
    assert report == whole_log_report(session, default_window=1_000)


def test_the_benchmark_prints_each_figure_beside_the_whole_log_report():
    """``benchmarks/context_report.py`` on small sessions (figures are not checked: no timing
    assertions; it exits with an error if the kept report differs from the whole log's)."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "context_report.py"
    done = subprocess.run(
        [sys.executable, str(script), "--sizes", "300,1200", "--repeat", "3"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("load average: ") and lines[-1].startswith("load average after: ")
    for figure in ("whole log", "first report", "after one turn"):
        row = next(line for line in lines if line.startswith(figure))
        assert row.count(" ms (") == 2 and row.endswith("x")
