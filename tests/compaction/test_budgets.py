"""Budgets and small correctness items (docs/compaction.md, "Hysteresis and futility" and "The
footer"; the validation rules of docs/config.md; issue 12 items 3, 7, 8)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent.hooks import compaction_hooks
from dsh.compaction import (
    CompactionEngine,
    ExtractiveSummarizer,
    ModelSummarizer,
    RecallableBackend,
    SummaryOutput,
    SummaryTask,
)
from dsh.compaction.anchors import AnchorIndex, extract_anchors
from dsh.compaction.base import RegionPlan, heuristic_total
from dsh.compaction.recallable.state_input import fold_state, request_tokens, split_state_task
from dsh.config import load_settings
from dsh.errors import ConfigError, ProviderError
from dsh.events import CompactionPlanEvent, CompactionSummaryEvent
from tests.agent.conftest import Harness, run
from tests.compaction.test_recallable import FOOTER, SETTINGS, engine_for, long_session
from tests.helpers import (
    append_tool_turn,
    assistant_message,
    tool_call_block,
    tool_result_message,
    user_message,
)

WORDS = ["ZEBRA-7731", "src/app.py", "retries=5", "port 8080", "plain", "words", "v1.2.3"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), max_size=6), max_size=12), st.randoms())
def test_the_incremental_anchor_index_equals_a_fresh_count_in_any_order(texts, rnd):
    texts = [" ".join(words) for words in texts]
    grown = AnchorIndex()
    for text in texts:
        grown.add(text)
    shuffled = list(texts)
    rnd.shuffle(shuffled)
    fresh = AnchorIndex()
    for text in shuffled:
        fresh.add(text)
    for word in WORDS:
        expected = sum(any(a.text == word for a in extract_anchors(t)) for t in texts)
        assert grown.count(word) == fresh.count(word) == expected


def test_config_refuses_a_low_watermark_at_or_above_the_threshold():
    with pytest.raises(ConfigError, match=r"compaction\.low_watermark_ratio"):
        load_settings(environ={}, overrides={"compaction": {"low_watermark_ratio": 0.8}})


def test_config_refuses_budgets_that_cannot_compact_in_the_configured_window():
    with pytest.raises(ConfigError, match=r"compaction\.state_max_tokens"):
        load_settings(
            environ={},
            overrides={
                "provider": {"context_window": 4096},
                "compaction": {"state_max_tokens": 4096},
            },
        )
    load_settings(environ={}, overrides={"provider": {"context_window": 4096}})  # unset: scaled
    with pytest.raises(ConfigError, match=r"compaction\.retain_tokens"):
        load_settings(
            environ={},
            overrides={
                "provider": {"context_window": 4096},
                "compaction": {"retain_tokens": 3500, "state_max_tokens": 500},
            },
        )
    ok = load_settings(
        environ={},
        overrides={"provider": {"context_window": 4096}, "compaction": {"state_max_tokens": 800}},
    )
    assert ok.compaction.state_max_tokens == 800


def test_the_fit_check_counts_the_configured_retain_tokens_not_the_ratio():
    """The state plus the retained tail must fit under the threshold; with ``retain_tokens``
    set, that is the tail (the ratio's 16% of 8,000 would have let 3,000 + 4,000 through)."""
    window = {"provider": {"context_window": 8000}}
    with pytest.raises(ConfigError, match=r"compaction\.state_max_tokens plus the retained tail"):
        load_settings(
            environ={},
            overrides={**window, "compaction": {"retain_tokens": 3000, "state_max_tokens": 4000}},
        )
    small_tail = {"retain_tokens": 200, "state_max_tokens": 6000}  # 6,200 < 6,400
    ok = load_settings(environ={}, overrides={**window, "compaction": small_tail})
    assert ok.compaction.state_max_tokens == 6000


def test_a_4k_window_compacts_under_pressure(harness: Harness):
    """``chunk_tokens // 2`` (2000) alone as the least stale material blocked every automatic
    pass in a 4k window; it scales with the window now."""
    budgets = msgspec.structs.replace(
        SETTINGS, retain_tokens=None, chunk_tokens=4000, stub_tokens=200, state_max_tokens=300
    )
    agent = harness.agent(
        [{"text": f"answer {i} " + "ok " * 40} for i in range(20)], context_window=4000
    )
    engine = CompactionEngine(
        harness.session, RecallableBackend(ExtractiveSummarizer(), budgets), budgets
    )
    agent.pre_step_hooks.append(compaction_hooks(engine)[0])
    after_pre_step: list[int] = []

    async def record(agent, turn) -> None:
        after_pre_step.append(harness.session.measure().total_tokens)

    agent.pre_step_hooks.append(record)
    for i in range(20):
        run(agent.run_turn(f"question {i} " + "tell me more " * 30))
    assert any(isinstance(e, CompactionPlanEvent) for e in harness.session.events)
    # every step starts below the threshold: the first crossing already compacts
    assert max(after_pre_step) < engine.threshold(4000)


def test_a_pressure_pass_compacts_down_to_the_low_watermark():
    session = long_session(turns=14)
    window = int(heuristic_total(session) / 0.85)  # above the threshold (0.8)
    settings_ = msgspec.structs.replace(SETTINGS, retain_tokens=1200)
    engine = engine_for(session, settings=settings_)
    result = run(engine.compact_if_needed("pressure", turn=None, window=window))
    assert result is not None
    # the configured tail alone would have left it above; the pass went deeper
    assert heuristic_total(session) <= engine.low_watermark(window)


def test_footers_read_forwards_through_a_superseded_state():
    session = long_session()
    engine = engine_for(session)
    run(engine.compact_now(window=100_000))
    for i in range(8, 12):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    second = run(engine.compact_now(window=100_000))
    state = second.checkpoints[-1]
    text = session.events[state.checkpoint_seq].data.text()
    match = FOOTER.search(text)
    assert match
    start, end = int(match.group(2)), int(match.group(3))
    first_shadowed = session.events[state.summary_seq]
    assert isinstance(first_shadowed, CompactionSummaryEvent)
    # the span starts at the superseded state, whose own seq is later than the old tail it
    # did not shadow: the footer names the originals behind it, not the checkpoint's seq
    assert start <= end
    assert start < min(second.checkpoints[0].shadowed_seqs)
    assert end == max(s for c in second.checkpoints for s in c.shadowed_seqs)


class _Hanging:
    name = "hang"

    def stream(self, request, *, history=()) -> AsyncIterator[object]:
        async def forever() -> AsyncIterator[object]:
            await asyncio.sleep(3600)
            yield None

        return forever()


def test_a_summariser_call_that_never_answers_times_out():
    summarizer = ModelSummarizer(_Hanging(), "m", timeout_s=0.05)  # type: ignore[arg-type]
    task = SummaryTask(kind="stub", messages=(user_message("hi"),), max_tokens=50)
    with pytest.raises(ProviderError, match="did not answer within"):
        run(summarizer.summarize(task))


class _Recorder:
    name = model = "rec"

    def __init__(self) -> None:
        self.tasks: list[SummaryTask] = []

    async def summarize(self, task):
        self.tasks.append(task)
        text = f"## Goal\nstate after {len(self.tasks)}"
        return SummaryOutput(text=text, provider="r", model="r")


def test_each_part_of_a_split_state_input_fits_the_window_as_it_is_sent():
    """The parts are priced as a compact call sends them (transcript text, which for short
    tool steps is longer than the blocks): every part of several messages fits the window."""
    messages: list = []
    for i in range(60):
        call = tool_call_block(f"c{i}", "read_file", f'{{"path":"src/m{i}.py"}}')
        messages += [assistant_message(tool_calls=[call]), tool_result_message(f"c{i}", "ok")]
    task = SummaryTask(kind="state", messages=tuple(messages), max_tokens=100, previous="s")
    for window in (1000, 1500):
        parts = split_state_task(task, window)
        assert len(parts) > 1
        assert all(request_tokens(p) <= window for p in parts if len(p.messages) > 1)


def test_a_state_input_too_big_for_the_window_is_split_in_order_and_folded():
    messages = tuple(user_message(f"message {i} " + "x" * 400) for i in range(12))
    task = SummaryTask(kind="state", messages=messages, max_tokens=100, previous="old state")
    window = 700
    parts = split_state_task(task, window)
    assert len(parts) > 1
    assert tuple(m for p in parts for m in p.messages) == messages  # all of it, in order
    assert all(request_tokens(p) <= window for p in parts if len(p.messages) > 1)
    recorder = _Recorder()
    region = RegionPlan(kind="state", shadowed_seqs=(1, 2), task=task)
    text = run(fold_state(recorder, region, 100, window))
    previous = [t.previous for t in recorder.tasks]
    assert previous[0] == "old state"
    assert [p.split("\n")[:2] for p in previous[1:]] == [
        ["## Goal", f"state after {n}"] for n in range(1, len(parts))
    ]
    assert text.summary.split("\n")[:2] == ["## Goal", f"state after {len(parts)}"]
    assert text.raw_output is None
    assert split_state_task(task, None) == [task]
    assert split_state_task(dataclasses.replace(task, messages=messages[:1]), 10_000) == [
        dataclasses.replace(task, messages=messages[:1])
    ]


def test_refusals_restart_after_the_context_drops_below_the_threshold():
    engine = engine_for(long_session())
    engine._crossing.refused(10)
    engine._crossing.gave_up = True
    result = run(engine.compact_if_needed("pressure", turn=None, window=10**7))
    assert result is None and not engine._crossing.gave_up and engine._crossing.refusals == 0


class _Overlap:
    """Counts how many summary calls are in flight at once. A different route from the
    conversation's (compact layout) whose one-call pass fails, so every region gets a call of
    its own."""

    name = model = "overlap"
    route = ("overlap", "overlap")

    def __init__(self) -> None:
        self.running = self.peak = self.calls = 0

    async def summarize(self, task):
        if task.kind == "pass":
            raise RuntimeError("the one call failed")
        self.running += 1
        self.calls += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(0.01)
        self.running -= 1
        return await ExtractiveSummarizer().summarize(task)


def test_a_pass_of_twenty_plus_chunks_runs_every_call_at_once():
    session = long_session(turns=60)
    summarizer = _Overlap()
    run(engine_for(session, summarizer).compact_now(window=10**6))
    assert summarizer.calls >= 21
    assert summarizer.peak == summarizer.calls  # the default cap (32) does not serialise them


def test_a_summariser_with_a_smaller_window_gets_calls_that_fit_its_own_window():
    """A summariser on another model (the compact layout) with a window of its own smaller
    than the conversation's: the state's input is split in order to fit that window, and a
    pass's one-call batches too, where before every call was sized by the conversation's."""
    from dsh.compaction.summarizer import call_window
    from tests.compaction.test_cache_riding import RouteSummarizer

    class SmallWindow(RouteSummarizer):
        context_window: int | None = None

    def requests(own: int | None) -> list[int]:
        session = long_session(turns=24)
        summarizer = SmallWindow(("another", "small-model"))
        summarizer.context_window = own
        backend = RecallableBackend(summarizer, SETTINGS)
        run(CompactionEngine(session, backend, SETTINGS).compact_now(window=100_000))
        assert summarizer.tasks and all(t.layout == "compact" for t in summarizer.tasks)
        return [request_tokens(t) for t in summarizer.tasks if len(t.messages) > 1]

    unbounded = requests(None)
    assert max(unbounded) > 2000  # sized by the conversation's 100k window
    bounded = requests(2000)
    assert bounded and max(bounded) <= 2000 and len(bounded) > len(unbounded)
    assert call_window(SmallWindow(("a", "b")), 100_000) == 100_000  # no own window
    own = SmallWindow(("a", "b"))
    own.context_window = 300_000
    assert call_window(own, 100_000) == 100_000  # the smaller of the two
    assert call_window(own, None) == 300_000


def test_the_summarisers_window_is_configured_checked_and_reaches_the_summariser(tmp_path):
    from dsh.compaction import make_summarizer
    from dsh.llm.scripted import ScriptedProvider

    with pytest.raises(ConfigError, match=r"compaction\.summarizer_context_window"):
        load_settings(
            environ={"DSH_HOME": str(tmp_path)},
            overrides={"compaction": {"summarizer_context_window": 500}},
        )
    settings = load_settings(
        environ={"DSH_HOME": str(tmp_path)},
        overrides={"compaction": {"summarizer": "small", "summarizer_context_window": 8192}},
    )
    summarizer = make_summarizer(settings.compaction, ScriptedProvider([]), "small")
    assert getattr(summarizer, "context_window", None) == 8192
