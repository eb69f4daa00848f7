"""The CLI faces read a session's own recorded settings on reopen: ``dsh run --session``,
``dsh compact`` (its explicit ``--backend`` switch and the refusal of a mixing one) and
``dsh sessions show --view settings``; a log written before settings were recorded still opens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dsh.cli.main import cli
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import run_session_id

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sessions" / "compaction-basic.jsonl"
FIXTURE_ID = json.loads(FIXTURE.read_text().splitlines()[0])["id"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    for name in ("DSH_COMPACTION_BACKEND", "DSH_PROVIDER_CONTEXT_WINDOW", "DSH_STORE_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def dsh(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def script(tmp_path: Path, entries: list[dict[str, Any]]) -> str:
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    path.write_text(json.dumps(entries))
    return str(path)


def events(home: Path, session_id: str) -> list[Any]:
    with Session.open(JsonlStore(home), session_id) as session:
        return list(session.events)


def settings_events(home: Path, session_id: str) -> list[Any]:
    return [e.data for e in events(home, session_id) if type(e).__name__ == "SessionSettingsEvent"]


def view(session_id: str) -> dict[str, str]:
    out = dsh("sessions", "show", session_id, "--view", "settings").stdout
    return dict(line.split(None, 1) for line in out.splitlines() if " " in line.strip())


def session_of(result: Any) -> str:
    return run_session_id(result.stderr)


def test_dsh_run_session_reopens_with_its_recorded_window_and_backend_not_the_config(
    tmp_path, home, monkeypatch
):
    answers = script(tmp_path, [{"text": "one"}, {"text": "two"}, {"text": "three"}])
    first = dsh(
        "run", "--script", answers, "--context-window", "16000", "--compaction", "basic", "hi"
    )
    sid = session_of(first)
    # the config changes under the session: it must not re-route it
    monkeypatch.setenv("DSH_COMPACTION_BACKEND", "recallable")
    monkeypatch.setenv("DSH_PROVIDER_CONTEXT_WINDOW", "128000")
    dsh("run", "--script", answers, "--session", sid, "again")
    shown = view(sid)
    assert shown["provider.context_window"] == "16000"
    assert shown["compaction.backend"] == "basic"
    assert len(settings_events(home, sid)) == 1  # nothing changed: nothing logged again
    contexts = [e.data for e in events(home, sid) if type(e).__name__ == "RequestContextEvent"]
    assert {c.context_window for c in contexts} == {16000}  # the loop really ran in it
    # a flag on reopen overrides explicitly: said on stderr and logged
    third = dsh("run", "--script", answers, "--session", sid, "--context-window", "24000", "more")
    assert "provider.context_window 16000 -> 24000" in third.stderr
    recorded = settings_events(home, sid)
    # the budgets the first run scaled to 16,000 tokens follow the window (window / 8, / 20)
    moved = ("compaction.chunk_tokens", "compaction.stub_tokens", "compaction.state_max_tokens")
    assert [r.changed for r in recorded] == [(), ("provider.context_window", *moved)]
    shown = view(sid)
    assert shown["provider.context_window"] == "24000"
    assert (shown["compaction.chunk_tokens"], shown["compaction.state_max_tokens"]) == (
        "3000",
        "1200",
    )


def _long_session(
    tmp_path: Path, turns: int, *extra: str, session: str | None = None, done: int = 0
) -> str:
    """``turns`` long turns; ``done``: model calls the resumed log already holds."""
    resume = ["--session", session] if session is not None else []
    entries = [{"text": f"answer {i} " + "detail " * 200} for i in range(done + turns)]
    prompts = [f"question {done + i} " + "context " * 200 for i in range(turns)]
    result = dsh(
        "run", "--script", script(tmp_path, entries), *resume, *extra, *prompts
    )  # fmt: skip
    return session_of(result)


def _summaries(home: Path, sid: str) -> list[Any]:
    return [e for e in events(home, sid) if type(e).__name__ == "CompactionSummaryEvent"]


def test_dsh_compact_uses_the_recorded_backend_refuses_a_mixing_one_and_switches_explicitly(
    tmp_path, home
):
    sid = _long_session(tmp_path, 6, "--compaction", "basic", "--context-window", "8000")
    assert dsh("compact", sid).stdout.startswith("Compacted ")
    basic = _summaries(home, sid)
    assert basic and all(s.data.model == "extractive" for s in basic)
    assert len({s.data.pass_id for s in basic}) == len(basic)  # basic: one summary per pass
    # a one-off pass with another backend would mix two layouts in one session: refused
    refused = dsh("compact", sid, "--compaction", "recallable", code=2)
    assert "--backend recallable" in refused.stderr and refused.stderr.count("\n") == 1
    assert len(_summaries(home, sid)) == len(basic)
    _long_session(tmp_path, 4, session=sid, done=6)  # new material, under the threshold
    switched = dsh("compact", sid, "--backend", "recallable")
    assert switched.stdout.startswith("Compacted ")
    assert "compaction.backend basic -> recallable" in switched.stderr
    assert settings_events(home, sid)[-1].changed == ("compaction.backend",)
    assert view(sid)["compaction.backend"] == "recallable"
    new = _summaries(home, sid)[len(basic) :]
    assert {s.data.kind for s in new} == {"index", "state"}  # recallable's layout from now on
    # adoption (docs/compaction.md, "Configuration"): the basic head checkpoint folds into the
    # new pass like a superseded state, so no basic checkpoint stays on the surface
    with Session.open(JsonlStore(home), sid) as session:
        old_checkpoints = {s.seq + 1 for s in basic}  # each summary is followed by its replace
        assert old_checkpoints.isdisjoint(session.nodes)
        folded = {seq for s in new for seq in s.data.shadowed_seqs}
        assert max(old_checkpoints) in folded


def test_a_log_written_before_settings_were_recorded_still_opens_with_the_configured_ones(
    tmp_path, home
):
    target = home / "sessions" / FIXTURE_ID
    target.mkdir(parents=True)
    shutil.copy(FIXTURE, target / "session.jsonl")
    assert (
        "no settings recorded" in dsh("sessions", "show", FIXTURE_ID, "--view", "settings").stdout
    )
    assert dsh("compact", FIXTURE_ID).stdout.startswith("Nothing to compact yet: all ")
    assert settings_events(home, FIXTURE_ID) == []  # a no-op compact appends nothing
    answers = script(tmp_path, [{"text": "recorded"}] * 4 + [{"text": "resumed fine"}])
    out = dsh("run", "--script", answers, "--session", FIXTURE_ID, "--cwd", str(tmp_path), "go")
    assert out.stdout.splitlines()[0] == "resumed fine"
    (recorded,) = settings_events(home, FIXTURE_ID)  # its first run records what it ran with
    assert recorded.compaction.backend == "recallable" and recorded.workspace == str(tmp_path)
    assert recorded.changed == ()


def test_dsh_compact_switches_the_backend_even_with_nothing_to_compact(tmp_path, home):
    """``--backend`` switches the backend as README and ``--help`` promise, even when there is
    nothing to compact: logged as a pass logs it and said (an audit saw it say nothing and
    switch nothing); a summariser given beside it waits for a pass that lands, and a plain
    compact with nothing to compact still logs nothing."""
    sid = _long_session(tmp_path, 1, "--compaction", "basic")
    before = settings_events(home, sid)
    idle = dsh("compact", sid, "--backend", "recallable", "--summarizer", "extractive")
    assert idle.stdout.startswith("Nothing to compact yet: all ") and idle.stdout.count("\n") == 1
    assert idle.stdout.rstrip().endswith("Its compaction backend is now recallable (recorded).")
    assert idle.stderr.count("the flags change its recorded settings") == 1
    assert "compaction.backend basic -> recallable" in idle.stderr
    *_, switched = settings_events(home, sid)
    assert len(settings_events(home, sid)) == len(before) + 1
    assert switched.compaction.backend == "recallable"
    assert view(sid)["compaction.backend"].strip() == "recallable"
    again = dsh("compact", sid, "--backend", "recallable")  # already its backend: nothing new
    assert "now recallable" not in again.stdout and "the flags change" not in again.stderr
    assert len(settings_events(home, sid)) == len(before) + 1


def test_the_settings_view_reads_the_recorded_settings_without_loading_the_log(
    tmp_path, home, monkeypatch
):
    answers = script(tmp_path, [{"text": "one"}, {"text": "two"}])
    sid = session_of(dsh("run", "--script", answers, "--context-window", "16000", "hi"))
    dsh("run", "--script", answers, "--session", sid, "--context-window", "24000", "again")
    from dsh.agent.session_settings import latest
    from dsh.agent.settings_view import describe

    with Session.open(JsonlStore(home), sid) as session:  # what the view printed by loading it
        loaded = "".join(f"{line}\n" for line in describe(latest(session)))
    assert "24000" in loaded and len(settings_events(home, sid)) == 2

    def no_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the settings view loaded the log")

    monkeypatch.setattr(JsonlStore, "open", no_load)
    assert dsh("sessions", "show", sid, "--view", "settings").stdout == loaded
    assert dsh("sessions", "show", sid[:15], "--view", "settings").stdout == loaded  # a prefix
