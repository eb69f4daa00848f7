"""The bench states a fixed environment in its system prompt (``BENCH_ENVIRONMENT``), so its
figures do not move with the day or the machine it runs on, while what it sends has the shape
of what a face sends."""

from __future__ import annotations

import platform
from datetime import date
from pathlib import Path

import pytest

from dsh.agent.environment import detect, environment_section
from dsh.bench.generate import generate
from dsh.bench.options import RunOptions
from dsh.bench.runner import BENCH_ENVIRONMENT, DISPLAY_ROOT, _Run, run_scenario
from dsh.bench.scenario import Scenario, parse_spec
from tests.bench.test_runner import SPEC, without_time


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return generate(parse_spec(SPEC, source="test"), 5)


class OtherDay(date):
    @classmethod
    def today(cls) -> OtherDay:
        return cls(2031, 2, 28)


def another_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another day, another platform, no git: what ``detect`` would read changes."""
    monkeypatch.setattr("dsh.agent.environment.date", OtherDay)
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "mac_ver", lambda: ("15.1.1", ("", "", ""), "arm64"))
    monkeypatch.setattr("dsh.agent.environment.git_facts", lambda workspace: None)


def bench_system(scenario: Scenario, tmp_path: Path) -> str:
    run = _Run(scenario, "recallable", RunOptions(latency_ms=0), tmp_path, None)
    return run._agent().config.system or ""


def test_the_bench_prompt_states_the_fixed_environment_whatever_the_date(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    here = bench_system(scenario, tmp_path / "here")
    another_machine(monkeypatch)
    assert detect(tmp_path).date == date(2031, 2, 28)  # what a face would state now
    assert detect(tmp_path).platform == "macOS 15.1.1"
    there = bench_system(scenario, tmp_path / "there")
    assert there == here
    assert here.endswith(environment_section(BENCH_ENVIRONMENT))
    assert f"Workspace: {DISPLAY_ROOT}/{scenario.name}" in here


def test_the_bench_figures_are_the_same_on_another_day_and_machine(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
):
    options = RunOptions(latency_ms=0)
    here = run_scenario(scenario, "basic", options=options)
    another_machine(monkeypatch)
    there = run_scenario(scenario, "basic", options=options)
    assert here["error"] is None
    assert without_time(here) == without_time(there)


def test_the_fixed_environment_has_the_shape_and_size_of_a_detected_one(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    detected = environment_section(detect(tmp_path))
    fixed = environment_section(BENCH_ENVIRONMENT)
    assert [line.split(":")[0] for line in fixed.splitlines()] == [
        line.split(":")[0] for line in detected.splitlines()
    ]
    assert abs(len(fixed) - len(detected)) <= 40
