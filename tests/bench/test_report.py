"""The report from hand-assembled run directories: online probe rows, failed runs, verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.bench.generate import generate
from dsh.bench.jobs import Job, run_job
from dsh.bench.options import OnlineOptions, RunOptions
from dsh.bench.report import write_report
from dsh.bench.results import FailedRun, RunResult, as_record
from dsh.bench.runner import run_scenario
from dsh.bench.scenario import parse_spec
from dsh.bench.tables import complete_cells, flat, pool
from dsh.bench.verdict import verdict
from dsh.cli.bench import bench
from tests.bench.test_runner import SPEC, FakeOnline


def write_run_dir(directory: Path, runs: list[dict[str, Any]], **meta: Any) -> None:
    (directory / "runs").mkdir(parents=True)
    for number, run in enumerate(runs):
        path = directory / "runs" / f"{number}.json"
        path.write_text(json.dumps(run), encoding="utf-8")
    (directory / "meta.json").write_text(json.dumps({"seed": 5, **meta}), encoding="utf-8")


def test_online_runs_get_the_probe_rows_and_a_failed_run_is_reported(tmp_path: Path) -> None:
    scenario = generate(parse_spec(SPEC, source="test"), 5)
    online = OnlineOptions(provider="fake", model="fake-1", questions=2)
    probed = run_scenario(
        scenario, "recallable", options=RunOptions(online=online), summariser_provider=FakeOnline()
    )
    failed = run_job(Job("missing.jsonl", "basic", 5, RunOptions()))
    assert "cannot read scenario" in failed["error"] and "traceback" in failed
    write_run_dir(tmp_path, [probed, failed], mode="online", online={"provider": "fake"})
    report = write_report(tmp_path).read_text()
    assert report.count("| Handoff probe: exact answers (stale answers) |") == 2
    assert "> **basic did not complete:** BenchError" in report
    assert "No verdict: basic and recallable did not both complete." in report
    # basic completed no run: it is named, and recallable's cell still pools
    assert "left out: missing.jsonl seed 5. Completed no run: basic." in report
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["summary"]["recallable"]["probeQuestions"] > 0


def test_pooled_figures_compare_arms_on_the_cells_every_arm_completed(tmp_path: Path) -> None:
    """Recallable ran seeds 5 and 6, basic only seed 5 (its seed-6 run failed): the pooled ratio
    is seed 5's ratio, not recallable's two seeds over basic's one."""
    runs = [
        run_scenario(generate(parse_spec(SPEC, source="test"), seed), backend)
        for seed in (5, 6)
        for backend in ("basic", "recallable")
    ]
    name = runs[0]["scenario"]
    runs[2] = {"backend": "basic", "error": "BenchError: worker died", "scenario": name, "seed": 6}
    write_run_dir(tmp_path, runs)
    report = write_report(tmp_path).read_text()
    assert f"left out: {name} seed 6." in report
    table = report.split("### Billed cost (cache-hit ratio) — deepseek\n")[1]
    row = next(line for line in table.splitlines() if line.startswith(f"| {name} |"))
    all_row = next(line for line in table.splitlines() if line.startswith("| **all** |"))
    seed5_ratio = row.split("|")[-2].split("/")[0].strip()
    assert all_row.split("|")[-2].strip() == seed5_ratio
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["recallable"]["requests"] == runs[1]["counts"]["requests"]


def test_an_arm_that_completed_no_run_does_not_empty_the_pooled_comparison(tmp_path: Path) -> None:
    runs: list[dict[str, Any]] = [
        run_scenario(generate(parse_spec(SPEC, source="test"), 5), backend)
        for backend in ("basic", "recallable")
    ]
    name = runs[0]["scenario"]
    runs.append({"backend": "basic+recall", "error": "ConfigError: no key", "scenario": name})
    runs[-1]["seed"] = 5
    write_run_dir(tmp_path, runs)
    report = write_report(tmp_path).read_text()
    assert "Completed no run: basic+recall." in report
    assert "Pooled over the cells every arm completed" not in report
    assert "No verdict" not in report
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["recallable"]["requests"] == runs[1]["counts"]["requests"]


def test_the_verdict_says_plainly_when_recallable_wins_within_budget() -> None:
    base = {
        "reachable": 5,
        "anchors": 10,
        "surviving": 5,
        "current": 8,
        "currentSurviving": 4,
        "summariserCalls": 2,
        "passes": 2,
        "tokensAfterSum": 2000,
        "warnings": 0,
        "deepseek.cost": 1.0,
        "deepseek.summariserCost": 0.1,
        "deepseek.summariserInput": 1000,
        "deepseek.summariserRead": 100,
        "deepseek.firstRead": 0,
        "deepseek.firstInput": 100,
    }
    better = {**base, "reachable": 9, "deepseek.cost": 0.9}
    assert verdict(base, better, "deepseek").startswith(
        "**Recallable beats basic on recall at 0.90× basic's cost (budget 1.00×)"
    )
    near = {**better, "deepseek.cost": 1.2}
    assert "not within 1.00×" in verdict(base, near, "deepseek")
    hair = {**better, "deepseek.cost": 1.003}  # two decimals would hide the miss as 1.00×
    assert "not within 1.00× basic's cost: it costs 1.003×" in verdict(base, hair, "deepseek")
    level = {**better, "deepseek.cost": 1.0}
    assert "at 1.00× basic's cost" in verdict(base, level, "deepseek")
    costly = {**better, "deepseek.cost": 2.0, "deepseek.summariserCost": 0.5, "summariserCalls": 9}
    text = verdict(base, costly, "deepseek")
    assert text.startswith("**Recallable beats basic on recall, but not within 1.00×")
    assert "summariser calls cost $0.5000 against $0.1000" in text
    assert "10% of recallable's summariser input is a cache hit" in text
    assert verdict(base, base, "deepseek").startswith("**Recallable does not beat basic")
    tools = {**base, "reachable": 8, "paraphraseHit5": 1, "paraphraseN": 4}
    with_control = verdict(
        base, {**better, "paraphraseHit5": 2, "paraphraseN": 4}, "deepseek", tools
    )
    assert "the tools alone take reach from 50% to 80%, stubs and state take it to 90%" in (
        with_control
    )


def test_pooling_sums_counts_and_keeps_maxima() -> None:
    a = {"backend": "basic", "passes": 2, "peak": 100, "recallOffered": False}
    b = {"backend": "basic", "passes": 3, "peak": 300, "recallOffered": False}
    assert pool([a, b]) == {"backend": "basic", "passes": 5, "peak": 300, "recallOffered": False}
    assert flat({"backend": "off", "error": "boom"}) == {
        "errors": 1,
        "backend": "off",
        "recallOffered": False,
    }


def test_a_run_file_with_a_mistyped_field_is_a_one_line_error_naming_file_and_field(
    tmp_path: Path,
) -> None:
    golden = Path(__file__).parent / "golden" / "runs" / "1.json"
    run = json.loads(golden.read_text(encoding="utf-8"))
    run["safety"]["peakContext"] = "lots"
    write_run_dir(tmp_path, [run])
    result = CliRunner().invoke(bench, ["report", str(tmp_path)])
    assert result.exit_code != 0
    (line,) = result.output.strip().splitlines()
    assert "0.json: not a bench run record" in line and "$.safety.peakContext" in line
    assert not (tmp_path / "results.json").exists()


_TEMPLATE = as_record(
    json.loads((Path(__file__).parent / "golden" / "runs" / "1.json").read_text())
)


@settings(max_examples=60, deadline=None)
@given(
    present=st.dictionaries(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.integers(1, 3),
            st.sampled_from(["basic", "recallable", "off"]),
        ),
        st.booleans(),  # True: completed, False: failed
        max_size=27,
    )
)
def test_complete_cells_are_exactly_the_cells_every_arm_completed(present) -> None:
    """Pairing property: the kept runs are those of the cells where every arm that completed
    anything completed; every arm keeps the same cells; kept and left-out cells cover all."""
    assert isinstance(_TEMPLATE, RunResult)
    runs = [
        msgspec.structs.replace(_TEMPLATE, scenario=sc, seed=seed, backend=arm)
        if done
        else FailedRun(backend=arm, error="x", scenario=sc, seed=seed)
        for (sc, seed, arm), done in present.items()
    ]
    kept, left_out = complete_cells(runs)
    arms = {arm for (_, _, arm), done in present.items() if done}  # an arm that completed
    cells = {(sc, seed) for sc, seed, _ in present}
    complete = {
        cell for cell in cells if arms and all(present.get((*cell, arm)) is True for arm in arms)
    }
    assert {(r.scenario, r.seed) for r in kept} == complete
    assert set(left_out) == cells - complete and len(left_out) == len(set(left_out))
    for arm in arms:
        assert {(r.scenario, r.seed) for r in kept if r.backend == arm} == complete
