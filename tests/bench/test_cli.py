"""``dsh bench`` end to end: one small scenario, four arms and two seeds in parallel processes,
the report with every table and plot, the results.json fields other tools read, and the other
subcommands."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.bench.generate import generate
from dsh.bench.report import write_report
from dsh.bench.scenario import load_spec, to_jsonl
from dsh.cli.bench import bench

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("bench") / "run"
    result = CliRunner().invoke(
        bench,
        [
            "run",
            "--scenario",
            "bugfix-small",
            "--out",
            str(out),
            "--seed",
            "7",
            "--seed",
            "11",
            "--latency-ms",
            "20",
            "--jobs",
            "2",
            "--deepseek-interval",
            "2048",
            "--openai-evict-minutes",
            "7",
            "--step-seconds",
            "15",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return out, result.output


def test_a_run_names_its_report_and_shows_progress_per_run(run_dir: tuple[Path, str]) -> None:
    out, output = run_dir
    assert f"report: {out / 'report.md'}" in output
    for arm in ("off", "basic", "basic+recall", "recallable"):
        for seed in (7, 11):  # plain progress lines, one run per arm and seed
            assert f"[bench] bugfix-small/{arm}@{seed}: finished" in output


def test_the_report_has_every_table(run_dir: tuple[Path, str]) -> None:
    out, _ = run_dir
    report = (out / "report.md").read_text()
    assert "Seeds: **7, 11**" in report and "Versions: dsh" in report
    assert "## Headline" in report and "Cells are seed s7 / s11" in report
    for rule in ("deepseek", "deepseek-strict", "openai", "anthropic"):
        assert f"### Billed cost (cache-hit ratio) — {rule}" in report
    assert "| scenario | off | basic | basic+recall | recallable | recallable ÷ basic |" in report
    assert "| **all** | recallable |" in report  # pooled rows
    assert "### DeepSeek: sensitivity to the fixed-interval rule" in report
    assert "## Summary (every scenario and seed pooled)" in report
    assert "| metric | off | basic | basic+recall | recallable |" in report
    assert "## Scenario `bugfix-small`" in report
    assert "### Seed 7" in report and "### Seed 11" in report
    assert "### Verdict: recallable against basic" in report
    summary_rows = (
        "Survival — current facts verbatim in the final request",
        "Superseded values in the final request: shown / shown as current",
        "Recall hit@1 / hit@5 / MRR — exact query",
        "Recall hit@1 / hit@5 / MRR — partial query",
        "Recall hit@1 / hit@5 / MRR — paraphrase query",
        "Compacted facts the stub/state text names a working search term for",
        "Superseded values leaked as current",
        "Cache-hit ratio — deepseek |",
        "Billed cost — deepseek (summariser share)",
        "Compaction passes",
        "Commits that grew the context",
        "Passes per threshold crossing",
        "Pairing errors (requests)",
        "Index stubs / stability violations",
    )
    for row in summary_rows:  # in the summary table and in each seed's scenario table
        assert report.count(f"| {row}") == 3, row
    for row in (
        "First request after a pass: hit ratio — openai",
        "Billed cost — anthropic (summariser share)",
        "Billed cost — deepseek-strict (summariser share)",
        "Wall time per pass, mean / max",
        "Requests rebuilt from the log ≠ requests sent",
    ):
        assert report.count(f"| {row}") == 2, row
    assert "## Configuration and method" in report and "spec digest" in report
    assert "- Control (basic+recall: basic compaction with the recall tools)" in report


def test_results_json_keeps_the_fields_other_tools_read(run_dir: tuple[Path, str]) -> None:
    out, _ = run_dir
    results = json.loads((out / "results.json").read_text())
    runs = results["runs"]
    arms = ["off", "basic", "basic+recall", "recallable"]
    assert [(r["seed"], r["backend"]) for r in runs] == [(s, a) for s in (7, 11) for a in arms]
    assert all(r["error"] is None and r["scenario"] == "bugfix-small" for r in runs)
    assert results["meta"]["seeds"] == [7, 11] and results["meta"]["versions"]["python"]
    assert set(results["summary"]) == set(arms)
    for run in runs:
        for rule in ("deepseek", "deepseek-strict", "openai", "anthropic"):
            assert {"cost", "hitRatio", "summariserCost"} <= set(run["cache"][rule])
        assert isinstance(run["passes"], list)
        assert 0 <= run["reachable"]["share"] <= 1
        for kind in ("exact", "partial", "paraphrase"):
            assert 0 <= run["recall"][kind]["hit5"] <= 1
        assert run["safety"]["growthCommits"] == 0
        assert {"current", "superseded"} <= set(run["survival"])
    (scenario,) = results["meta"]["scenarios"]
    assert all(fact["paraphrases"] for fact in scenario["facts"])
    recallable = runs[3]
    assert recallable["counts"]["events"] >= 200 and recallable["passes"]
    per_request = recallable["cache"]["deepseek"]["firstAfterPass"]["perRequest"]
    assert sum(len(r["passes"]) for r in per_request) == len(recallable["passes"])


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib is not installed: no PNG plots")
def test_the_report_links_every_plot(run_dir: tuple[Path, str]) -> None:
    out, _ = run_dir
    report = (out / "report.md").read_text()
    for name in ("context-bugfix-small.png", "cache-bugfix-small.png", "cost.png", "recall.png"):
        path = out / "plots" / name
        assert path.read_bytes().startswith(b"\x89PNG"), name
        assert f"(plots/{name})" in report


def test_without_matplotlib_the_report_says_plots_were_skipped(
    run_dir: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run_dir[0], copy)
    shutil.rmtree(copy / "plots", ignore_errors=True)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    report = write_report(copy).read_text()
    assert "Plots skipped: matplotlib is not installed" in report
    assert "![" not in report and not (copy / "plots").exists()
    assert "## Summary (every scenario and seed pooled)" in report


def test_report_rewrites_a_run_directory_with_another_headline(
    run_dir: tuple[Path, str],
) -> None:
    out, _ = run_dir
    result = CliRunner().invoke(bench, ["report", str(out), "--provider-cache", "anthropic"])
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    summary = report.split("### Verdict")[0]
    assert "Cache-hit ratio — anthropic" in summary and "Billed cost (anthropic)" in report
    CliRunner().invoke(bench, ["report", str(out)])  # back to the run's own headline


def test_report_refuses_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "not a bench run directory" in result.output


def test_list_and_generate(tmp_path: Path) -> None:
    listed = CliRunner().invoke(bench, ["list"])
    assert listed.exit_code == 0 and "migration-long" in listed.output
    target = tmp_path / "s.jsonl"
    made = CliRunner().invoke(
        bench, ["generate", "bugfix-small", "--seed", "3", "--out", str(target)]
    )
    assert made.exit_code == 0
    assert target.read_bytes() == to_jsonl(generate(load_spec("bugfix-small"), 3))


def test_online_mode_without_a_key_is_skipped_with_a_clear_message(tmp_path: Path) -> None:
    result = CliRunner(env={"DEEPSEEK_API_KEY": None}).invoke(
        bench,
        [
            "run",
            "--online",
            "--provider",
            "deepseek",
            "--model",
            "deepseek-chat",
            "--out",
            str(tmp_path / "online"),
        ],
    )
    assert result.exit_code == 0
    assert "online mode skipped: DEEPSEEK_API_KEY is not set" in result.output
    assert not (tmp_path / "online").exists()


def test_unknown_names_are_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench, ["run", "--scenario", "nope", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "unknown scenario 'nope'" in result.output
    result = CliRunner().invoke(bench, ["run", "--backend", "fancy", "--out", str(tmp_path / "y")])
    assert result.exit_code == 2 and "unknown backend(s) fancy" in result.output
