"""``dsh bench`` end to end: one small scenario, three backends in parallel processes, the
report with every table and plot, and the other subcommands."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.bench.generate import generate
from dsh.bench.report import write_report
from dsh.bench.scenario import load_spec, to_jsonl
from dsh.cli.bench import bench

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float, str]:
    out = tmp_path_factory.mktemp("bench") / "run"
    started = time.monotonic()
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
            "--latency-ms",
            "20",
            "--jobs",
            "2",
        ],
        catch_exceptions=False,
    )
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.output
    return out, elapsed, result.output


def test_a_small_run_finishes_in_under_a_minute(run_dir: tuple[Path, float, str]) -> None:
    out, elapsed, output = run_dir
    assert elapsed < 60
    assert f"report: {out / 'report.md'}" in output
    assert "[bench] bugfix-small/recallable: finished" in output  # plain progress lines


def test_the_report_has_every_table(run_dir: tuple[Path, float, str]) -> None:
    out, _, _ = run_dir
    report = (out / "report.md").read_text()
    assert "Seed: **7**" in report and "Versions: dsh" in report
    assert "## Summary (all scenarios pooled)" in report
    assert "| metric | off | basic | recallable |" in report
    assert "## Scenario `bugfix-small`" in report
    assert "### Verdict: recallable against basic" in report
    summary_rows = (
        "Survival (anchors verbatim in the final request)",
        "Recall hit@1 / hit@5 / MRR — exact query",
        "Recall hit@1 / hit@5 / MRR — partial query",
        "Superseded values leaked as current",
        "Cache-hit ratio — deepseek",
        "Billed cost — deepseek (summariser share)",
        "Compaction passes",
        "Commits that grew the context",
        "Passes per threshold crossing",
        "Pairing errors (requests)",
        "Index stubs / stability violations",
    )
    for row in summary_rows:  # in the summary table and in the scenario table
        assert report.count(f"| {row}") == 2, row
    for row in (
        "First request after a pass: hit ratio — openai",
        "Billed cost — anthropic (summariser share)",
        "Wall time per pass, mean / max",
        "Requests rebuilt from the log ≠ requests sent",
    ):
        assert report.count(f"| {row}") == 1, row
    assert "## Configuration and method" in report and "spec digest" in report


def test_results_json_holds_every_run(run_dir: tuple[Path, float, str]) -> None:
    out, _, _ = run_dir
    results = json.loads((out / "results.json").read_text())
    assert [r["backend"] for r in results["runs"]] == ["off", "basic", "recallable"]
    assert all(r["error"] is None for r in results["runs"])
    assert results["meta"]["seed"] == 7 and results["meta"]["versions"]["python"]
    assert set(results["summary"]) == {"off", "basic", "recallable"}
    recallable = results["runs"][2]
    assert recallable["counts"]["events"] >= 200
    assert recallable["passes"] and recallable["safety"]["growthCommits"] == 0


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib is not installed: no PNG plots")
def test_the_report_links_every_plot(run_dir: tuple[Path, float, str]) -> None:
    out, _, _ = run_dir
    report = (out / "report.md").read_text()
    for name in ("context-bugfix-small.png", "cache-bugfix-small.png", "cost.png", "recall.png"):
        path = out / "plots" / name
        assert path.read_bytes().startswith(b"\x89PNG"), name
        assert f"(plots/{name})" in report


def test_without_matplotlib_the_report_says_plots_were_skipped(
    run_dir: tuple[Path, float, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run_dir[0], copy)
    shutil.rmtree(copy / "plots", ignore_errors=True)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    report = write_report(copy).read_text()
    assert "Plots skipped: matplotlib is not installed" in report
    assert "![" not in report and not (copy / "plots").exists()
    assert "## Summary (all scenarios pooled)" in report


def test_report_rewrites_a_run_directory_with_another_headline(
    run_dir: tuple[Path, float, str],
) -> None:
    out, _, _ = run_dir
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
