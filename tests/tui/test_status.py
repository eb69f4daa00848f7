"""The status bar: compaction progress, cache-hit ratio, context use."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from dsh.events import (
    CompactionEnd,
    CompactionPlan,
    CompactionStart,
    RegionText,
    SessionEndSeed,
)
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.transcript.stats import session_stats
from dsh.tui.progress import CacheCounter, CompactionProgress
from dsh.tui.status_bar import StatusInfo, status_text
from tests.helpers import new_session
from tests.tui import scenarios
from tests.tui.conftest import SIZE, Rig

REGION = RegionText(kind="state", shadowed_seqs=(0,), summary="s")


def follow(session: Session, progress: CompactionProgress) -> list[str | None]:
    texts: list[str | None] = []
    session.subscribe(lambda event: (progress.feed(event), texts.append(progress.text)))
    return texts


def test_the_indicator_counts_committed_regions_of_the_planned_pass():
    session = new_session(MemoryStore())
    progress = CompactionProgress()
    texts = follow(session, progress)
    session.append(CompactionStart(compaction_id="p-1", pass_id="p", turn=None))
    session.append(CompactionPlan(pass_id="p", regions=(REGION, REGION, REGION)))
    session.append(CompactionEnd(compaction_id="p-1", pass_id="p", turn=None))
    session.append(CompactionStart(compaction_id="p-2", pass_id="p", turn=None))
    session.append(CompactionEnd(compaction_id="p-2", pass_id="p", turn=None))
    session.append(CompactionStart(compaction_id="p-3", pass_id="p", turn=None))
    session.append(CompactionEnd(compaction_id="p-3", pass_id="p", turn=None))
    assert texts == [
        "compacting…",
        "compacting · 0 of 3 regions",
        "compacting · 1 of 3 regions",
        "compacting · 1 of 3 regions",
        "compacting · 2 of 3 regions",
        "compacting · 2 of 3 regions",
        None,
    ]


def test_a_failed_pass_a_legacy_bracket_and_a_dead_lifecycle_clear_the_indicator():
    session = new_session(MemoryStore())
    progress = CompactionProgress()
    texts = follow(session, progress)
    session.append(CompactionStart(compaction_id="q-1", pass_id="q", turn=None))
    session.append(CompactionEnd(compaction_id="q-1", pass_id="q", turn=None, error="guard"))
    session.append(CompactionStart(compaction_id="legacy", turn=None))
    session.append(CompactionEnd(compaction_id="legacy", turn=None))
    session.append(CompactionStart(compaction_id="r-1", pass_id="r", turn=None))
    session.append(SessionEndSeed())
    assert texts == ["compacting…", None, "compacting…", None, "compacting…", None]


def test_the_status_bar_shows_the_pass_while_the_app_watches_it(rig: Rig):
    app = scenarios.compaction_app(rig)
    shown: list[str | None] = []

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            session = app.controller.ensure_session()
            session.subscribe(lambda event: shown.append(app.status_bar.info.compaction))
            await scenarios.drive(pilot)

    asyncio.run(main())
    assert "compacting…" in shown
    assert "compacting · 0 of 1 regions" in shown
    assert shown[-1] is None


def test_the_cache_ratio_is_the_one_session_stats_reports(rig: Rig):
    rig.cache = "deepseek"
    session_id, _ = scenarios.record(rig, SIZE)
    session = Session.open(rig.store, session_id)
    counter = CacheCounter()
    for event in session.events:
        counter.feed(event)
    expected = session_stats(session.events).cache_hit_ratio
    assert expected is not None and expected > 0 and counter.ratio == expected
    app = scenarios.cold_app(rig, session_id)

    async def main() -> Any:
        async with app.run_test(size=SIZE):
            return app.status_bar.info

    info = asyncio.run(main())
    assert info.cache_ratio == expected
    assert info.context_tokens == session.measure().total_tokens
    assert info.compaction is None


def test_status_text_reads_model_context_cache_and_activity():
    info = StatusInfo(
        model="deepseek-chat",
        context_tokens=32_000,
        context_window=128_000,
        cache_ratio=0.5,
        compaction="compacting · 1 of 3 regions",
        busy="working…",
    )
    assert status_text(info).plain == (
        " deepseek-chat · context 25% of 128k · cache hits 50%"
        " · compacting · 1 of 3 regions · working…"
    )
    assert status_text(StatusInfo(context_window=2500)).plain == (
        " no model · context 0% of 2.5k · cache hits n/a"
    )


def test_a_compact_is_named_once_by_its_progress_and_kept_when_the_line_is_narrow():
    """``/compact`` runs as "compacting" and its pass shows its progress: the bar says the
    progress once, where what runs goes (never left out), then the key that cancels it."""
    info = StatusInfo(
        model="m",
        context_window=8000,
        compaction="compacting · 2 of 5 regions",
        busy="compacting",
        cancels=True,
    )
    assert status_text(info).plain == (
        " m · context 0% of 8k · cache hits n/a · compacting · 2 of 5 regions · esc cancels"
    )
    assert status_text(info, width=46).plain == " m · compacting · 2 of 5 regions · esc cancels"


def test_status_text_names_the_queue_and_the_cancel_key_and_fits_the_width():
    """A queued draft is counted, and the key named is ctrl+c (esc would take the draft back);
    a narrow line leaves out the highest ranks first — cache hits, trust, context — and
    keeps the model, what runs and the queue."""
    info = StatusInfo(
        model="deepseek-chat",
        context_tokens=32_000,
        context_window=128_000,
        cache_ratio=0.5,
        busy="working…",
        cancels=True,
        trust="project config trusted",
    )
    assert status_text(info).plain == (
        " deepseek-chat · context 25% of 128k · cache hits 50% · working… · esc cancels"
        " · project config trusted"
    )
    queued = replace(info, queued=1)
    assert status_text(queued).plain == (
        " deepseek-chat · context 25% of 128k · cache hits 50% · working… · 1 queued"
        " · ctrl+c cancels · project config trusted"
    )
    assert status_text(queued, 80).plain == (
        " deepseek-chat · context 25% of 128k · working… · 1 queued · ctrl+c cancels"
    )
    assert status_text(queued, 60).plain == " deepseek-chat · working… · 1 queued · ctrl+c cancels"
    assert status_text(queued, 40).plain == " deepseek-chat · working… · 1 queued"
    assert status_text(queued, 10).plain == " deepseek-chat · working…"  # cut at the edge
    assert status_text(replace(info, busy=None, queued=1), 200).plain == (
        " deepseek-chat · context 25% of 128k · cache hits 50% · project config trusted"
    )  # nothing runs: no queue or key to name
    for width in (80, 60, 40):
        assert status_text(queued, width).cell_len <= width


def test_status_text_shows_a_models_name_and_a_commands_escapes_as_escapes():
    """A recorded model's name and a ``!cmd`` may hold terminal escapes: they show on one line,
    each as its Python escape (Textual would send them to the terminal as they are)."""
    info = StatusInfo(model="m\x1b]0;title\x07", context_window=1000, busy="$ printf '\x9b2J'\nls")
    assert status_text(info).plain == (
        " m\\x1b]0;title\\x07 · context 0% of 1k · cache hits n/a · $ printf '\\x9b2J' ls"
    )


def test_the_status_bar_says_whether_the_project_config_is_trusted(tmp_path):
    from dsh.config import set_trust
    from dsh.tui.status_bar import trust_label

    env = {"DSH_HOME": str(tmp_path / "home")}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert trust_label(workspace, env) is None  # no project config: nothing to say
    (workspace / ".dsh").mkdir()
    (workspace / ".dsh" / "config.toml").write_text('[tools]\napproval = "auto"\n')
    untrusted = trust_label(workspace, env)
    assert untrusted == "project config untrusted: safety keys ignored (dsh trust)"
    assert status_text(StatusInfo(trust=untrusted)).plain.endswith(f" · {untrusted}")
    set_trust(workspace, True, env)
    assert trust_label(workspace, env) == "project config trusted"
    (workspace / ".dsh" / "config.toml").write_text('[tools]\napproval = "auto"\n# changed\n')
    assert trust_label(workspace, env) == (
        "project config changed since trusted: safety keys ignored (review it, dsh trust)"
    )
    (workspace / ".dsh" / "config.toml").write_text("[tools\n")  # broken, so not trusted
    assert trust_label(workspace, env) == (
        "project config untrusted and broken: ignored whole (see /warnings)"
    )  # said "safety keys ignored", though the whole file is
