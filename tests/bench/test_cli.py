"""``dsh bench`` end to end: one small scenario, four arms and two seeds in parallel processes,
the report with every table and plot, the results.json fields other tools read, and the other
subcommands."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.bench.cache_rules import (
    ANTHROPIC_LOOKBACK_BLOCKS,
    ANTHROPIC_MIN_TOKENS,
    ANTHROPIC_TTL_S,
    DEEPSEEK_UNIT,
    RULES,
    make_rule,
)
from dsh.bench.generate import generate
from dsh.bench.method import SCORING_NOTES
from dsh.bench.report import write_report
from dsh.bench.runner import BACKENDS
from dsh.bench.scenario import load_spec, to_jsonl
from dsh.bench.trace import SimulatedSummarizer
from dsh.cli.bench import bench
from tests.bench.test_runner import SPEC
from tests.llm.fake_server import FakeServer, json_ok, oa_usage, openai_text

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
    assert (
        "| scenario | off | basic | basic+recall | recallable | recallable ÷ basic "
        "| basic+recall ÷ basic |" in report
    )
    assert "basic+recall ÷ basic is the control" in report
    assert "| **all** | recallable |" in report  # pooled rows
    assert "### DeepSeek: sensitivity to the fixed-interval rule" in report
    assert "## Summary (the scenario-seed cells every arm completed, pooled)" in report
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
    assert "## Summary (the scenario-seed cells every arm completed, pooled)" in report


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


def _method_sentences(report: str) -> list[str]:
    notes = report.split("Method notes:", 1)[1].strip().splitlines()
    bullets = [line[2:] for line in notes if line.startswith("- ")]
    return [s for b in bullets for s in re.split(r"(?<=\.)\s+(?=[A-Z])", b)]


def test_the_method_notes_are_true_of_the_run_sentence_by_sentence(
    run_dir: tuple[Path, str],
) -> None:
    """Each sentence of the method section is matched to a check against the run's own
    settings (the flags the fixture passed, meta.json, the runs, the code's constants); a
    sentence no check covers fails the test."""
    out, _ = run_dir
    results = json.loads((out / "results.json").read_text())
    meta, runs = results["meta"], results["runs"]
    anthropic = meta["prices"]["anthropic"]

    def seeds(m: re.Match[str]) -> bool:
        return (
            m["seeds"] == "7, 11"
            and m["arms"].split(", ") == sorted({r["backend"] for r in runs}, key=BACKENDS.index)
            and m["scenarios"] == "bugfix-small"
        )

    checks: list[tuple[str, Callable[[re.Match[str]], bool]]] = [
        (r"Seeds: (?P<seeds>.+); arms: (?P<arms>.+); scenarios: (?P<scenarios>.+)\.$", seeds),
        (
            r"Real: the agent loop, .* built by `build_summary_request`, the function "
            r"`ModelSummarizer` sends\.$",
            lambda m: (
                SimulatedSummarizer.summarize.__code__.co_names.count("build_summary_request") == 1
            ),
        ),
        (
            r"Simulated: the conversation model is `scripted` .* latency of (?P<ms>\d+) ms per "
            r"call; every cache figure and price comes from the cache rules below\.$",
            lambda m: (
                int(m["ms"]) == 20 == meta["latencyMs"]
                and all(r["time"]["latencyMs"] == 20 for r in runs)
                and all(r["summariser"].startswith("extractive") for r in runs)
            ),
        ),
        (
            r"Requests are segmented in provider order .* one per content block for anthropic\) "
            r"and counted with dsh's token heuristic .*; a segment that differs at all misses "
            r"from its first byte\.$",
            lambda m: (
                [make_rule(n).view for n in RULES] == ["messages", "messages", "messages", "blocks"]
            ),
        ),
        (
            r"Simulated clock: each conversation request comes (?P<s>[\d.]+) s after the previous",
            lambda m: float(m["s"]) == 15.0 == meta["cache"]["stepSeconds"],
        ),
        (
            r"deepseek: prefix units are persisted .* and every (?P<n>\d+|off) tokens, in "
            r"(?P<unit>\d+)-token units; a request hits the longest persisted unit",
            lambda m: (
                int(m["n"]) == 2048 == meta["cache"]["deepseekInterval"]
                and int(m["unit"]) == DEEPSEEK_UNIT
            ),
        ),
        (
            r"DeepSeek does not document the interval .*; the sensitivity table shows intervals "
            r"(?P<list>.+)\.$",
            lambda m: (
                m["list"] == "off, 1024, 2048, 4096, 16384"
                and all(
                    set(m["list"].split(", ")) == set(r["sensitivity"]["deepseekInterval"])
                    for r in runs
                )
            ),
        ),
        (
            r"deepseek-strict: only whole earlier requests and request \+ reply are persisted, "
            r"with no (?P<unit>\d+)-token rounding\.$",
            lambda m: int(m["unit"]) == DEEPSEEK_UNIT,
        ),
        (
            r"openai: floor\(LCP/128\)×128 against earlier prompts, for prompts of at least "
            r"1024 tokens; a prefix unused for (?P<min>[\d.]+) minutes is evicted\.$",
            lambda m: float(m["min"]) == 7.0 == meta["cache"]["openaiEvictMinutes"],
        ),
        (
            r"anthropic: breakpoints where `dsh.llm.anthropic` puts them .* a (?P<look>\d+)-block "
            r"lookback counted in content blocks, a (?P<min>\d+)-token minimum, writes "
            r"×(?P<w>[\d.]+), reads ×(?P<r>[\d.]+), and entries that live (?P<ttl>[\d.]+) s",
            lambda m: (
                int(m["look"]) == ANTHROPIC_LOOKBACK_BLOCKS
                and int(m["min"]) == ANTHROPIC_MIN_TOKENS
                and float(m["w"]) == anthropic["cache_write"]
                and float(m["r"]) == anthropic["cache_read"]
                and float(m["ttl"]) == ANTHROPIC_TTL_S == meta["cache"]["anthropicTtlS"]
            ),
        ),
        (r"Probe calls \(online mode\) are left out", lambda m: meta["mode"] == "offline"),
        *((re.escape(note) + "$", lambda m: True) for note in SCORING_NOTES),
    ]
    sentences = _method_sentences((out / "report.md").read_text())
    assert len(sentences) == len(checks)
    for sentence in sentences:
        matched = [(p, check) for p, check in checks if re.match(p, sentence)]
        assert len(matched) == 1, sentence
        pattern, check = matched[0]
        assert check(re.match(pattern, sentence)), sentence  # type: ignore[arg-type]


def test_online_mode_targets_an_openai_compatible_server_from_the_provider_config(
    tmp_path: Path,
) -> None:
    """A real HTTP stand-in on 127.0.0.1: the `[provider]` config names it, `--api-key-env`
    names the key; every summariser and probe call goes to it with that key, and the report's
    method says what was real."""
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    with FakeServer() as server:
        reply = openai_text(
            "## Goal\n- keep going\nKeywords — id: ZEBRA-7731", usage=oa_usage(9, 3)
        )
        server.queue(*[reply] * 400)
        (home / "config.toml").write_text(
            '[provider]\nname = "openai-compatible"\nmodel = "fake-1"\n'
            f'base_url = "{server.url}"\n',
            encoding="utf-8",
        )
        out = tmp_path / "online"
        result = CliRunner(env={"DSH_HOME": str(home), "BENCH_FAKE_KEY": "sekrit"}).invoke(
            bench,
            [
                "run",
                "--online",
                "--api-key-env",
                "BENCH_FAKE_KEY",
                "--scenario",
                str(spec),
                "--backend",
                "recallable",
                "--seed",
                "5",
                "--jobs",
                "1",
                "--questions",
                "1",
                "--out",
                str(out),
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        requests = list(server.requests)
    assert requests and all(r.headers.get("authorization") == "Bearer sekrit" for r in requests)
    assert {r.body["model"] for r in requests} == {"fake-1"}
    results = json.loads((out / "results.json").read_text())
    (run,) = results["runs"]
    assert run["error"] is None and run["summariser"] == "model"
    assert run["online"]["questions"] > 0 and run["online"]["errors"] == 0
    compaction = run["counts"]["summariserCalls"]
    assert compaction > 0 and len(requests) == compaction + sum(
        1 + r["recallCalls"] for r in run["online"]["records"]
    )
    assert results["meta"]["online"]["base_url"] == server.url
    assert "sekrit" not in (out / "meta.json").read_text()
    report = (out / "report.md").read_text()
    assert (
        f"Real (online): the summariser and the handoff probe, `openai-compatible:fake-1` at "
        f"{server.url}, with the key from BENCH_FAKE_KEY." in report
    )
    assert "the summariser's text comes from `extractive`" not in report


def test_online_mode_takes_the_endpoint_from_the_environment_for_an_openai_compatible_server(
    tmp_path: Path,
) -> None:
    """`DSH_PROVIDER_BASE_URL` with `--provider openai-compatible` (the config's provider name is
    still the default) reaches the stand-in, without the user's OpenAI key (it is not OpenAI);
    with no endpoint anywhere the run is refused with one line instead of writing a failed
    report."""
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    args = ["run", "--online", "--provider", "openai-compatible", "--model", "fake-1"]
    args += ["--scenario", str(spec), "--backend", "recallable", "--seed", "5", "--jobs", "1"]
    args += ["--questions", "1"]
    refused = CliRunner(env={"DSH_HOME": str(home)}).invoke(
        bench, [*args, "--out", str(tmp_path / "none")]
    )
    assert refused.exit_code == 2
    assert "needs a base URL" in refused.output
    assert not (tmp_path / "none").exists()
    with FakeServer() as server:
        reply = openai_text("## Goal\n- keep going", usage=oa_usage(9, 3))
        server.queue(*[reply] * 400)
        env = {
            "DSH_HOME": str(home),
            "DSH_PROVIDER_BASE_URL": server.url,
            "OPENAI_API_KEY": "sk-openai-of-the-user",
        }
        result = CliRunner(env=env).invoke(
            bench, [*args, "--out", str(tmp_path / "online")], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        assert server.requests
    assert {r.body["model"] for r in server.requests} == {"fake-1"}
    assert {r.headers.get("authorization") for r in server.requests} == {"Bearer none"}


def test_online_mode_uses_the_one_model_a_server_lists_and_the_configured_headers(
    tmp_path: Path,
) -> None:
    """With no model named anywhere, online mode asks the server (``/v1/models``) and uses the
    one model it lists, as a session's route does; the ``[provider.headers]`` go with every
    call, the listing included, and stay out of the run's files. A server listing two models
    is refused in one line naming them."""
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    args = ["run", "--online", "--scenario", str(spec), "--backend", "recallable"]
    args += ["--seed", "5", "--jobs", "1", "--questions", "1"]
    with FakeServer() as server:
        (home / "config.toml").write_text(
            f'[provider]\nname = "openai-compatible"\nbase_url = "{server.url}/v1"\n'
            '[provider.headers]\n"X-Gateway-Token" = "gw-secret-42"\n',
            encoding="utf-8",
        )
        server.fixed["/v1/models"] = json_ok({"data": [{"id": "a"}, {"id": "b"}]})
        refused = CliRunner(env={"DSH_HOME": str(home)}).invoke(
            bench, [*args, "--out", str(tmp_path / "none")]
        )
        assert refused.exit_code == 2
        assert "serves 2 models: a, b" in refused.output
        assert not (tmp_path / "none").exists()

        server.fixed["/v1/models"] = json_ok({"data": [{"id": "only-one"}]})
        server.queue(*[openai_text("## Goal\n- keep going", usage=oa_usage(9, 3))] * 400)
        out = tmp_path / "online"
        result = CliRunner(env={"DSH_HOME": str(home)}).invoke(
            bench, [*args, "--out", str(out)], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        calls, listings = list(server.requests), list(server.fixed_requests)
    assert calls and {r.body["model"] for r in calls} == {"only-one"}
    assert {r.headers.get("x-gateway-token") for r in [*calls, *listings]} == {"gw-secret-42"}
    assert all(b"gw-secret-42" not in f.read_bytes() for f in out.rglob("*") if f.is_file())


def test_compaction_overrides_reach_every_run_and_the_report(tmp_path: Path) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(json.dumps({**SPEC, "name": "small"}), encoding="utf-8")
    out = tmp_path / "run"
    result = CliRunner().invoke(
        bench,
        [
            *("run", "--scenario", str(spec), "--backend", "basic,recallable", "--seed", "5"),
            *("--latency-ms", "0", "--out", str(out), "--jobs", "1"),
            *("--compaction", "stub_region_ratio=0.2", "--compaction", "low_watermark_ratio=0.3"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    runs = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))]
    assert len(runs) == 2
    for run in runs:
        assert run["settings"]["stub_region_ratio"] == 0.2
        assert run["settings"]["low_watermark_ratio"] == 0.3
        assert run["settings"]["chunk_tokens"] == SPEC["compaction"]["chunk_tokens"]  # kept
    meta = json.loads((out / "meta.json").read_text())
    assert meta["compactionOverrides"] == {"stub_region_ratio": 0.2, "low_watermark_ratio": 0.3}
    report = (out / "report.md").read_text()
    assert "compaction overrides (every scenario, every arm): low_watermark_ratio=0.3, " in report
    assert "stub_region_ratio=0.2" in report.split("| compaction settings |", 1)[1]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("nope=2", "--compaction 'nope=2': expected KEY=VALUE"),
        ("summarizer=model", "--compaction 'summarizer=model': expected KEY=VALUE"),
        ("stub_region_ratio", "--compaction 'stub_region_ratio': expected KEY=VALUE"),
        ("stub_region_ratio=0.9", "compaction.stub_region_ratio must be below threshold_ratio"),
        ("chunk_tokens=lots", "scenario bugfix-small: compaction:"),
        ("retain_tokens=20000", "retain_tokens must be below the threshold (9600 tokens"),
    ],
)
def test_a_bad_compaction_override_is_refused_before_anything_runs(
    tmp_path: Path, item: str, message: str
) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        bench, ["run", "--scenario", "bugfix-small", "--out", str(out), "--compaction", item]
    )
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1 and not out.exists()
