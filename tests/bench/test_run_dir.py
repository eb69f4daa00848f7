"""A run directory tells the truth about what ran: a run into a directory that already holds
another run is refused, a run that is stopped keeps the runs that finished, and the report names
every planned run that has no file."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped,unused-ignore]

import dsh.bench.jobs as jobs_module
from dsh.bench.generate import generate
from dsh.bench.options import RunOptions
from dsh.bench.report import write_report
from dsh.bench.runner import run_scenario
from dsh.bench.scenario import parse_spec
from dsh.bench.stopping import RunStopped
from dsh.bench.suite import run_suite
from dsh.errors import ConfigError
from tests.bench.test_runner import SPEC


def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    return path


def test_a_run_into_a_directory_holding_another_run_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    (out / "runs").mkdir(parents=True)
    old = out / "runs" / "other--basic--seed7.json"
    old.write_text('{"backend": "basic", "error": "x"}', encoding="utf-8")
    (out / "meta.json").write_text('{"seeds": [7]}', encoding="utf-8")
    with pytest.raises(ConfigError, match="already holds a bench run"):
        run_suite(
            [str(spec_file(tmp_path))],
            ["basic"],
            seeds=[5],
            out=out,
            options=RunOptions(latency_ms=0),
            workers=1,
        )
    assert old.is_file() and (out / "meta.json").read_text() == '{"seeds": [7]}'
    assert sorted(p.name for p in out.iterdir()) == ["meta.json", "runs"]


def test_an_empty_directory_is_a_fine_out_and_the_report_writing_is_said(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    progress = io.StringIO()
    run_suite(
        [str(spec_file(tmp_path))],
        ["off"],
        seeds=[5],
        out=out,
        options=RunOptions(latency_ms=0),
        workers=1,
        stream=progress,
    )
    assert [p.name for p in (out / "runs").iterdir()] == ["tiny--off--seed5.json"]
    assert progress.getvalue().endswith(f"writing the report and its plots in {out} …\n")


def test_a_stopped_run_keeps_the_runs_that_finished_and_the_report_names_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = jobs_module.run_scenario

    def stopped_on_the_second(scenario: Any, backend: str, **kwargs: Any) -> dict[str, Any]:
        calls.append(backend)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C while the second run is going
        return real(scenario, backend, **kwargs)

    monkeypatch.setattr(jobs_module, "run_scenario", stopped_on_the_second)
    out = tmp_path / "run"
    with pytest.raises(RunStopped, match="stopped by SIGINT: 1 of 2 runs finished"):
        run_suite(
            [str(spec_file(tmp_path))],
            ["basic", "recallable"],
            seeds=[5],
            out=out,
            options=RunOptions(latency_ms=0),
            workers=1,
        )
    assert [p.name for p in (out / "runs").iterdir()] == ["tiny--basic--seed5.json"]
    report = write_report(out).read_text()
    assert "> **recallable did not complete:** no run file" in report
    assert "Completed no run: recallable." in report
    results = json.loads((out / "results.json").read_text())
    assert [(r["backend"], "error" in r and r["error"] is not None) for r in results["runs"]] == [
        ("basic", False),
        ("recallable", True),
    ]


def test_pooled_figures_leave_out_a_cell_whose_planned_run_has_no_file(tmp_path: Path) -> None:
    """Seed 6's recallable run never wrote its file: seed 6 is left out of every pooled figure,
    exactly as if it had failed."""
    runs = {
        (seed, backend): run_scenario(
            generate(parse_spec(SPEC, source="test"), seed), backend, options=RunOptions()
        )
        for seed in (5, 6)
        for backend in ("basic", "recallable")
        if (seed, backend) != (6, "recallable")
    }
    name = runs[(5, "basic")]["scenario"]
    (tmp_path / "runs").mkdir()
    for (seed, backend), run in runs.items():
        path = tmp_path / "runs" / f"{name}--{backend}--seed{seed}.json"
        path.write_text(json.dumps(run), encoding="utf-8")
    meta = {"seeds": [5, 6], "backends": ["basic", "recallable"], "scenarioOrder": [name]}
    (tmp_path / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    report = write_report(tmp_path).read_text()
    assert f"left out: {name} seed 6." in report
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["basic"]["requests"] == runs[(5, "basic")]["counts"]["requests"]


def test_a_run_directory_without_a_run_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "meta.json").write_text('{"seeds": [7]}', encoding="utf-8")
    with pytest.raises(ConfigError, match="no run file"):
        write_report(tmp_path)
    assert not (tmp_path / "report.md").exists()
