"""``results.json`` and ``report.md`` of a small run directory are byte-for-byte what they were
before the bench results became typed (fixtures recorded from the dict-based code, then
regenerated when the one-call recallable pass changed recallable's figures on purpose, and
when the stub share's default fell from 0.15 to 0.03 with a floor of four stubs, and when
the simulated Anthropic rule took the stub-region breakpoint ``dsh.llm.anthropic`` sends, and
when the report began naming the runs ``meta.json`` plans that have no file, and when the
settings gained ``summarizer_context_window``: a key, no figure, and when ``history_search``
began looking for a query's words when nothing matches literally: paraphrase recall only, and
when the system prompt began stating the environment, ``BENCH_ENVIRONMENT``: 49 tokens more on
every request of every arm, the same passes, the probed run's third and fourth a step earlier,
and when the extractive state stopped listing an answered request under Next steps: recallable
$0.0001 more on OpenAI, $0.0001 less on Anthropic, and when ``history_search`` began listing
hits in checkpoint texts after those in the originals: the fake provider answers with the last
``ZEBRA-77xx`` of the search answer, at the probe's sixth pass a stub's keyword line's
``ZEBRA-7731`` where it was an original's decoy ``ZEBRA-7713``, so 6/11 exact answers where
there were 5/11; the fake's rule, not a measure of recall).

The run directory holds the four offline arms of the small test scenario, one online run
against the keyless fake provider (the probe section) and one failed run. Wall times and the
failed run's traceback vary from run to run; they are set to fixed values before the runs are
written, the way any other tool reading ``runs/*.json`` would see them.

Regenerate deliberately (a changed figure is a finding, not a fixture to refresh):
``uv run python -m tests.bench.test_results_golden``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh.bench.generate import generate
from dsh.bench.jobs import Job, run_job
from dsh.bench.options import OnlineOptions, RunOptions
from dsh.bench.report import write_report
from dsh.bench.runner import BACKENDS, run_scenario
from dsh.bench.scenario import parse_spec
from tests.bench.test_runner import SPEC, FakeOnline

FIXTURES = Path(__file__).parent / "golden"
META: dict[str, Any] = {
    "runId": "golden",
    "created": "2026-01-01T00:00:00+00:00",
    "seed": 5,
    "seeds": [5, 6],
    "mode": "offline",
    "latencyMs": 0,
    "online": None,
    "cache": {
        "deepseekInterval": 4096,
        "openaiEvictMinutes": 10,
        "stepSeconds": 30,
        "anthropicTtlS": 300,
    },
    "backends": list(BACKENDS),
    "scenarioOrder": ["tiny"],
    "scenarios": [{"name": "tiny", "description": "a tiny spec for tests"}],
    "headline": "deepseek",
    "versions": {"dsh": "0.1.0", "git": "golden", "python": "3.x", "platform": "any"},
    "workers": 1,
}


def _fixed_times(run: dict[str, Any]) -> dict[str, Any]:
    if "time" in run:
        run["time"].update(wallS=1.5, passWallMeanS=0.25, passWallMaxS=0.5)
        for number, record in enumerate(run["passes"]):
            record["wall_s"] = 0.125 * (number + 1)
    if "traceback" in run:
        run["traceback"] = "Traceback (fixed for the fixture)"
    return run


def golden_runs() -> list[dict[str, Any]]:
    """The runs of the fixture directory, in their JSON form."""
    options = RunOptions(latency_ms=0)
    offline = generate(parse_spec(SPEC, source="test"), 5)
    runs = [run_scenario(offline, arm, options=options) for arm in BACKENDS]
    online = RunOptions(online=OnlineOptions(provider="fake", model="fake-1", questions=2))
    probed = generate(parse_spec(SPEC, source="test"), 6)
    fake = FakeOnline()
    runs.append(run_scenario(probed, "recallable", options=online, summariser_provider=fake))
    runs.append(run_job(Job("missing.jsonl", "basic", 5, RunOptions())))
    return [_fixed_times(run) for run in runs]


def write_golden_dir(directory: Path) -> Path:
    runs_dir = directory / "runs"
    runs_dir.mkdir(parents=True)
    for number, run in enumerate(golden_runs()):
        text = json.dumps(run, indent=1, sort_keys=True)
        (runs_dir / f"{number}.json").write_text(text, encoding="utf-8")
    meta = json.dumps(META, indent=1, sort_keys=True)
    (directory / "meta.json").write_text(meta, encoding="utf-8")
    return write_report(directory)


def test_results_json_and_the_report_are_byte_for_byte_the_recorded_ones(tmp_path: Path) -> None:
    report = write_golden_dir(tmp_path)
    assert (tmp_path / "results.json").read_bytes() == (FIXTURES / "results.json").read_bytes()
    assert report.read_bytes() == (FIXTURES / "report.md").read_bytes()
    for number in range(len(list((FIXTURES / "runs").glob("*.json")))):
        name = f"runs/{number}.json"
        assert (tmp_path / name).read_bytes() == (FIXTURES / name).read_bytes(), name


if __name__ == "__main__":
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        written = write_golden_dir(Path(tmp) / "run")
        shutil.rmtree(FIXTURES, ignore_errors=True)
        FIXTURES.mkdir()
        shutil.copy(written.parent / "results.json", FIXTURES / "results.json")
        shutil.copy(written, FIXTURES / "report.md")
        shutil.copytree(written.parent / "runs", FIXTURES / "runs")
    print(f"wrote {FIXTURES}")
