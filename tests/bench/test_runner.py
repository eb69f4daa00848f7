"""One scenario through the real loop, in-process: figures are deterministic, every safety
figure holds, and the online code path runs against a keyless fake provider."""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from dsh.bench.generate import generate
from dsh.bench.jobs import Job, run_jobs
from dsh.bench.options import OnlineOptions, RunOptions
from dsh.bench.runner import run_scenario
from dsh.bench.scenario import Scenario, load_spec, parse_spec
from dsh.events import Event, Usage
from dsh.llm.types import (
    Finish,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)
from tests.bench.test_generate import SMALL

SPEC = {
    **SMALL,
    "turns": 10,
    "window": 5000,
    "compaction": {
        "retain_tokens": 800,
        "chunk_tokens": 600,
        "stub_tokens": 80,
        "state_max_tokens": 300,
    },
    "steps": [1, 2],
}


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return generate(parse_spec(SPEC, source="test"), 5)


def without_time(result: dict[str, Any]) -> dict[str, Any]:
    figures = {k: v for k, v in result.items() if k != "time"}
    figures["passes"] = [{k: v for k, v in p.items() if k != "wall_s"} for p in result["passes"]]
    return figures


@pytest.mark.parametrize("backend", ["off", "basic", "basic+recall", "recallable"])
def test_every_figure_but_time_is_deterministic(scenario: Scenario, backend: str) -> None:
    options = RunOptions(latency_ms=0)
    first = run_scenario(scenario, backend, options=options)
    second = run_scenario(scenario, backend, options=options)
    assert first["error"] is None
    assert without_time(first) == without_time(second)


def test_a_compacting_run_presents_no_superseded_value_as_current() -> None:
    """refactor-medium at seed 7 reverses a decision in prose ("Change of plan: ... instead")
    after the old one reached the state; the state drops the reversed decision."""
    scenario = generate(load_spec("refactor-medium"), 7)
    result = run_scenario(scenario, "recallable", options=RunOptions(latency_ms=0))
    assert result["superseded"]["leaks"] == 0


def test_a_compacting_run_keeps_every_safety_figure(scenario: Scenario) -> None:
    result = run_scenario(scenario, "recallable", options=RunOptions(latency_ms=0))
    safety = result["safety"]
    assert result["error"] is None and len(result["passes"]) >= 2
    assert safety["growthCommits"] == 0 and safety["maxPassesPerCrossing"] == 1
    assert safety["pairingErrors"] == 0 and safety["logMismatches"] == 0
    assert result["stability"]["violations"] == 0 and result["stability"]["stubs"] > 0
    assert result["counts"]["requests"] == len(scenario.entries())
    assert result["recall"]["offered"] is True
    assert result["recall"]["exact"]["hit5"] == 1.0
    for rule in ("deepseek", "deepseek-strict", "openai", "anthropic"):
        cache = result["cache"][rule]
        assert 0 < cache["hitRatio"] < 1 and cache["summariserCost"] > 0
        assert len(cache["cumulative"]) == result["counts"]["requests"]
    off = run_scenario(scenario, "off", options=RunOptions(latency_ms=0))
    assert off["passes"] == [] and off["survival"]["share"] == 1.0
    assert off["safety"]["overWindow"] > 0


def test_the_basic_recall_arm_is_basic_compaction_with_the_recall_tools(
    scenario: Scenario,
) -> None:
    basic = run_scenario(scenario, "basic", options=RunOptions(latency_ms=0))
    control = run_scenario(scenario, "basic+recall", options=RunOptions(latency_ms=0))
    assert control["error"] is None and control["backend"] == "basic+recall"
    assert control["settings"]["backend"] == "basic"
    assert control["recall"]["offered"] is True and basic["recall"]["offered"] is False
    assert control["stability"]["stubs"] == 0  # basic compaction: no index stubs
    assert control["passes"] and control["counts"]["finalLayout"]["index"] == 0
    # Offering the tools makes every compacted fact that recall finds reachable.
    assert control["reachable"]["share"] >= basic["reachable"]["share"]


def test_a_run_scores_every_recall_kind_and_survival_by_fact_status(scenario: Scenario) -> None:
    result = run_scenario(scenario, "recallable", options=RunOptions(latency_ms=0))
    recall = result["recall"]
    for kind in ("exact", "partial", "paraphrase"):
        assert set(recall[kind]) >= {"n", "hit1", "hit5", "mrr", "ranks"}
    facts = {f.anchor: f for f in scenario.facts}
    compacted = recall["population"]
    assert recall["paraphrase"]["n"] == sum(
        len(facts[a].paraphrases) for a in recall["exact"]["ranks"]
    )
    assert recall["cued"]["n"] == compacted
    survival = result["survival"]
    current = {f.anchor for f in scenario.current_facts()}
    assert set(survival["current"]["present"]) == current
    assert set(survival["superseded"]["where"]) == set(facts) - current
    intervals = result["sensitivity"]["deepseekInterval"]
    assert set(intervals) == {"off", "1024", "4096", "16384"}
    assert intervals["4096"]["cost"] == result["cache"]["deepseek"]["cost"]


def test_every_pass_of_a_riding_run_makes_one_summariser_call() -> None:
    """The bench's summariser is the conversation's own route, so each pass writes all its
    stubs and the state in one call riding the conversation's cache (even near the window,
    where the call carries the request up to the compacted span's end). In the 5,000-token
    window of the other tests the four-stub floor is an eighth of the window, and the last pass
    near the window splits its answer over two calls (the fewest that fit, ``pass_batches``,
    tested on its own); at 6,500 tokens every answer fits one call."""
    roomier = generate(parse_spec({**SPEC, "window": 6500}, source="test"), 5)
    result = run_scenario(roomier, "recallable", options=RunOptions(latency_ms=0))
    assert result["passes"]
    assert [p["summariser_calls"] for p in result["passes"]] == [1] * len(result["passes"])


class FakeOnline:
    """A keyless stand-in for a real provider: summaries for compaction calls; for a probe it
    calls history_search once (when offered), then answers with the ticket id it recalled."""

    name = "fake-online"

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        return self._answer(request)

    async def _answer(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if request.purpose == "compaction":
            yield TextDelta("## Goal\n- keep the importer working\nKeywords — id: fake")
        else:
            offered = any(t["name"] == "history_search" for t in request.tools)
            last = request.messages[-1]
            if offered and last.role == "user":
                yield ToolCallDelta(
                    0, id="probe-call", name="history_search", arguments='{"query": "ZEBRA-77"}'
                )
                yield Finish("tool-calls")
                return
            seen = " ".join(m.text() + str(m.content) for m in request.messages[-2:])
            found = re.findall(r"ZEBRA-77\d\d", seen)
            yield TextDelta(found[-1] if found else "I do not know")
        yield UsageReport(Usage(input_tokens=10, output_tokens=5))
        yield Finish("stop")


def test_the_online_path_runs_the_probe_with_a_model_summariser(scenario: Scenario) -> None:
    options = RunOptions(online=OnlineOptions(provider="fake", model="fake-1", questions=2))
    result = run_scenario(scenario, "recallable", options=options, summariser_provider=FakeOnline())
    online = result["online"]
    assert result["error"] is None and result["summariser"] == "model"
    assert online["questions"] > 0 and online["errors"] == 0
    assert online["recallUsage"] == 1.0  # the fake always searches first
    assert any(r["fact"] == "ticket" for r in online["records"])
    assert result["cache"]["deepseek"]["summariserCost"] > 0


def test_jobs_run_in_process_with_plain_progress_lines() -> None:
    stream = io.StringIO()
    jobs = [Job("bugfix-small", "off", 7, RunOptions(latency_ms=0))]
    (result,) = run_jobs(jobs, workers=1, stream=stream)
    assert result["error"] is None and result["scenario"] == "bugfix-small"
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[bench] bugfix-small/off: turn 1/12, 0 passes"
    assert "[bench] bugfix-small/off: turn 12/12, 0 passes" in lines
    assert lines[-1].startswith("[bench] bugfix-small/off: finished in ")
