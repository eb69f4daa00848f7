"""The TUI's, the web's and ``dsh compact``'s ``/compact`` are one composition: against one
config (a configured summariser model, a per-model override, a window the server reports) all
three summarise with the same model and cut the same regions with the same budgets and window.

A real HTTP server on 127.0.0.1 stands in for a llama.cpp-style OpenAI-compatible server: it
reports its window on ``/props`` and answers every summary request.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import dsh.llm.window
from dsh.cli.compact import compact
from dsh.compaction import BasicBackend, ExtractiveSummarizer
from dsh.config import CompactionSettings, load_settings
from dsh.events import CommandDoneEvent, CompactionPlanEvent
from dsh.store import EventStore, JsonlStore, MemoryStore
from dsh.surface import Session
from dsh.tui import DshApp, TuiOptions
from dsh.web import SessionRegistry, WebRuntime
from tests.helpers import append_tool_turn
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text
from tests.tui.conftest import SIZE, settle, submit

N_CTX = 6000
"""The window the server reports (no config sets one)."""
OVERRIDE_RETAIN_RATIO = 0.3
"""``[compaction.overrides."openai-compatible:big-model"]``: retain 30 % of the window, not 16 %."""
SUMMARIZER = "cheap-summary-model"
ID = re.compile(r"\b(call|msg)-\d+\b")


def config(server_url: str) -> str:
    return f"""
[provider]
name = "openai-compatible"
model = "big-model"
base_url = "{server_url}/v1"

[compaction]
backend = "basic"
summarizer = "{SUMMARIZER}"

[compaction.overrides."openai-compatible:big-model"]
retain_ratio = {OVERRIDE_RETAIN_RATIO}
"""


def a_long_session(store: EventStore, cwd: Path) -> str:
    session = Session.create(store, cwd=cwd)
    for i in range(10):
        output = f"output {i}: " + "the quick brown fox " * 60
        append_tool_turn(session, f"question {i}", calls=[("read_file", "{}", output)])
    session_id = session.id
    session.close()
    return session_id


def planned_regions(store: EventStore, session_id: str) -> list[tuple[tuple[int, ...], str, str]]:
    session = Session.open(store, session_id)
    plans = session.of_type(CompactionPlanEvent)
    assert len(plans) == 1, f"{session_id}: expected one pass, got {len(plans)}"
    (done,) = session.of_type(CommandDoneEvent)
    assert done.data.ok, done.data.text
    return [(r.shadowed_seqs, r.provider, r.model) for r in plans[0].data.regions]


def expected_shadowed(retain_ratio: float, window: int) -> Any:
    """The regions a basic pass with these budgets plans on a fresh copy of the session
    (summariser-independent)."""
    store = MemoryStore()
    session = Session.open(store, a_long_session(store, Path("/w")))
    budgets = CompactionSettings(backend="basic", retain_ratio=retain_ratio)
    plan = BasicBackend(ExtractiveSummarizer(), budgets).plan(
        session,
        retain_tokens=int(window * retain_ratio),
        focus=None,
        reason="manual",
        window=window,
    )
    return None if plan is None else [region.shadowed_seqs for region in plan.regions]


def compact_in_the_tui(settings: Any, store: EventStore, workspace: Path, session_id: str) -> None:
    app = DshApp(
        TuiOptions(
            settings=settings,
            store=store,
            workspace=workspace,
            resume=session_id,
            cursor_blink=False,
        )
    )

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, "/compact")
            await settle(pilot, lambda: not app.running, timeout=60)
            await pilot.pause()

    asyncio.run(main())


def compact_in_the_web(settings: Any, store: EventStore, workspace: Path, session_id: str) -> None:
    async def main() -> None:
        registry = SessionRegistry(store, WebRuntime(settings, store=store), default_cwd=workspace)
        handle = await registry.resume(session_id)
        await registry.start_compact(session_id, None)
        task = handle.runner.task
        assert task is not None
        await task
        await registry.shutdown()

    asyncio.run(main())


def test_the_tui_the_web_and_dsh_compact_compact_with_one_summariser_budgets_and_window(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": N_CTX}})
    server.fixed["/v1/chat/completions"] = openai_text("The work so far, in short.")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(config(server.url))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("DSH_HOME", str(home))
    # The window is asked once per process and a timeout is remembered as "not reported": on a
    # machine loaded enough to miss the 5 s budget all three faces would fall back to the
    # default window together, and the budgets below would not be the ones under test.
    monkeypatch.setattr(dsh.llm.window, "TIMEOUT", 60.0)
    settings = load_settings()
    store = JsonlStore(home)
    tui, web, cli = (a_long_session(store, workspace) for _ in range(3))

    compact_in_the_tui(settings, store, workspace, tui)
    compact_in_the_web(settings, store, workspace, web)
    result = CliRunner().invoke(compact, [cli], catch_exceptions=False)
    assert result.exit_code == 0 and result.output.startswith("Compacted "), result.output

    regions = {
        face: planned_regions(store, sid)
        for face, sid in [("tui", tui), ("web", web), ("cli", cli)]
    }
    assert regions["tui"] == regions["web"] == regions["cli"]
    # the summariser is the configured model on the conversation's provider, everywhere
    assert {(provider, model) for _, provider, model in regions["tui"]} == {
        ("openai-compatible", SUMMARIZER)
    }
    summaries = [r.body for r in server.fixed_requests if r.path == "/v1/chat/completions"]
    assert len(summaries) == 3 * len(regions["tui"])
    assert {body["model"] for body in summaries} == {SUMMARIZER}
    # the same requests (but for the ids the test helper numbers across the three sessions)
    assert len({ID.sub("#", json.dumps(body)) for body in summaries}) == len(regions["tui"])
    # the budgets are the override's, on the window the server reported
    shadowed = [seqs for seqs, _, _ in regions["tui"]]
    assert shadowed == expected_shadowed(OVERRIDE_RETAIN_RATIO, N_CTX)
    assert shadowed != expected_shadowed(CompactionSettings().retain_ratio, N_CTX)
    assert shadowed != expected_shadowed(OVERRIDE_RETAIN_RATIO, 2 * N_CTX)


def a_short_session(store: EventStore, cwd: Path) -> str:
    session = Session.create(store, cwd=cwd)
    for i in range(12):
        append_tool_turn(session, f"question {i}", calls=[("read_file", "{}", f"output {i}")])
    session_id = session.id
    session.close()
    return session_id


def test_a_compact_with_nothing_to_do_says_why_in_the_same_words_in_every_face(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """12 turns well inside the retained tail: "No compactable history yet." said nothing of
    why; every face now says it is all in the tail kept verbatim, with the figures."""
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": N_CTX}})
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(config(server.url))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.setattr(dsh.llm.window, "TIMEOUT", 60.0)  # as above: the reported window
    settings = load_settings()
    store = JsonlStore(home)
    tui, web, cli = (a_short_session(store, workspace) for _ in range(3))

    compact_in_the_tui(settings, store, workspace, tui)
    compact_in_the_web(settings, store, workspace, web)
    result = CliRunner().invoke(compact, [cli], catch_exceptions=False)
    assert result.exit_code == 0

    answers = {
        face: Session.open(store, sid).of_type(CommandDoneEvent)[0].data.text
        for face, sid in [("tui", tui), ("web", web)]
    }
    answers["cli"] = result.output.strip()
    assert answers["tui"] == answers["web"] == answers["cli"], answers
    retained = int(N_CTX * OVERRIDE_RETAIN_RATIO)
    said = re.fullmatch(
        r"Nothing to compact yet: all ([\d,]+) tokens of uncompacted history are in the recent "
        rf"tail a pass keeps verbatim \(at least {retained:,} tokens\); the next request is "
        rf"(\d+)% of the {N_CTX:,}-token window, and compaction runs by itself at 80%\.",
        answers["cli"],
    )
    assert said is not None, answers["cli"]
    assert 0 < int(said.group(1).replace(",", "")) <= retained
    assert not [r for r in server.fixed_requests if r.path == "/v1/chat/completions"]
