"""``dsh --resume ID`` in the real terminal UI (the command line parsed by the real ``cli``, the
app driven by its pilot): a session whose window its server gave opens in the window the server
reports now (a real HTTP stand-in on 127.0.0.1 answering ``GET /props`` as llama.cpp does), and
what the flags change of a session's recorded settings is said when a turn logs it, not when a
prompt is refused before anything is logged."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dsh.cli.main import cli
from dsh.events import RequestContextEvent, SessionSettingsEvent, TurnStartEvent
from dsh.llm import window as window_module
from dsh.tui import DshApp, TuiOptions
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text
from tests.tui.conftest import SIZE, run_prompt, settle, status_at_rest, submit
from tests.tui.test_pilot import text_of
from tests.tui.test_route_flags_tui import UI

FLAGS_CHANGE = "the flags change its recorded settings"


@pytest.fixture
def ui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> UI:
    return UI(tmp_path, monkeypatch)


def launched(ui: UI, *args: str) -> tuple[TuiOptions, str]:
    """``dsh ARGS`` through the real command line: the app's options and what it printed
    before the UI would take the terminal."""
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return ui.built[-1], result.output


def said(app: DshApp, words: str) -> list[tuple[str, int]]:
    return [(w.text, w.count) for w in app.warnings.entries if words in w.text]


def test_a_resumed_session_opens_in_the_window_its_server_reports_now(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    ui.home(tmp_path / "home")
    url = server.url + "/v1"
    route = ("--base-url", url, "--model", "m")
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 8192}})
    server.queue(openai_text("first answer"))
    first, _ = launched(ui, *route)
    _, [recorded] = ui.turn(first, "hello")
    assert (recorded.context_window, recorded.window_asked) == (8192, True)
    (session_id,) = [header.id for header in first.store.list()]
    window_module._CACHE.clear()  # what a new process knows: nothing
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 4096}})
    server.queue(openai_text("second answer"))
    options, printed = launched(ui, "--resume", session_id, *route)
    assert printed == ""
    app = DshApp(options)

    async def main() -> list[Any]:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            assert app.controller.window == 4096
            assert app.status_bar.info.context_window == 4096
            await run_prompt(pilot, "again")
            assert "second answer" in text_of(app)
            assert app.controller.session is not None
            return list(app.controller.session.events)

    events = asyncio.run(main())
    assert said(app, "its server now reports") == [
        (
            f"session {session_id}: its server now reports a 4,096-token context window for m "
            "(the session recorded 8,192); it runs and compacts in 4,096 (set --context-window "
            "or provider.context_window to choose another)",
            1,
        )
    ]
    windows = [e.data.context_window for e in events if isinstance(e, RequestContextEvent)]
    assert windows[-1] == 4096
    latest = [e.data for e in events if isinstance(e, SessionSettingsEvent)][-1]
    assert (latest.context_window, latest.window_asked) == (4096, True)
    assert latest.compaction.chunk_tokens == 512  # the budgets follow the window
    assert server.bodies[-1]["max_tokens"] == 820  # the reply bound of a 4,096 window


def test_the_flags_change_is_said_when_the_ui_logs_it_not_for_a_refused_prompt(
    ui: UI, tmp_path: Path
) -> None:
    ui.home(tmp_path / "home")
    script = ("--script", str(ui.script))
    first, _ = launched(ui, *script, "--context-window", "8192")
    ui.turn(first, "hello")
    (session_id,) = [header.id for header in first.store.list()]
    log = first.store.root / session_id / "session.jsonl"
    options, printed = launched(ui, "--resume", session_id, *script, "--context-window", "4096")
    assert FLAGS_CHANGE not in printed  # nothing is logged yet: nothing changed
    before = log.read_bytes()
    app = DshApp(options)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await submit(pilot, "word " * 2400)  # ~3k tokens: no room in 4,096
            await settle(pilot, lambda: "4,096-token context window leaves" in text_of(app))
            await settle(pilot, lambda: not app.running and status_at_rest(app))
            assert log.read_bytes() == before
            assert said(app, FLAGS_CHANGE) == []
            await run_prompt(pilot, "hi")
            assert app.controller.session is not None
            assert app.controller.session.of_type(TurnStartEvent)

    asyncio.run(main())
    assert said(app, FLAGS_CHANGE) == [
        (
            f"session {session_id}: {FLAGS_CHANGE}: provider.context_window 8192 -> 4096; "
            "with them: compaction.chunk_tokens 1024 -> 512; compaction.stub_tokens 81 -> 40; "
            "compaction.state_max_tokens 409 -> 204",  # the budgets scaled to the window
            1,
        )
    ]
    with_flag = [line for line in log.read_bytes().splitlines() if b"session/settings" in line]
    assert len(with_flag) == 2 and b'"contextWindow":4096' in with_flag[-1]


def test_a_window_the_user_set_stays_when_the_ui_reopens_the_session_on_another_server(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """``dsh --resume ID --base-url OTHER`` of a session run with ``--context-window 8000``,
    the other server reporting no window: the UI opens it in its 8,000 tokens (it used to open
    it in the 128,000 assumed for a new session), and the turn's warning names the move."""
    ui.home(tmp_path / "home")
    server.queue(openai_text("first answer"))
    first, _ = launched(
        ui, "--base-url", server.url + "/v1", "--model", "m", "--context-window", "8000"
    )
    ui.turn(first, "hello")
    (session_id,) = [header.id for header in first.store.list()]
    window_module._CACHE.clear()  # what a new process knows: nothing
    with FakeServer() as other:  # answers no window probe (404): a silent server
        other.queue(openai_text("second answer"))
        url = other.url + "/v1"
        options, _ = launched(ui, "--resume", session_id, "--base-url", url, "--model", "m")
        app = DshApp(options)

        async def main() -> list[Any]:
            async with app.run_test(size=SIZE) as pilot:
                await settle(pilot, lambda: app.ready)
                assert app.controller.window == 8000
                assert app.status_bar.info.context_window == 8000
                await run_prompt(pilot, "again")
                assert app.controller.session is not None
                return list(app.controller.session.events)

        events = asyncio.run(main())
        assert other.bodies[-1]["max_tokens"] == 1600  # the reply bound of an 8,000 window
    assert said(app, FLAGS_CHANGE) == [
        (
            f"session {session_id}: {FLAGS_CHANGE}: provider.base_url {server.url}/v1 -> {url}",
            1,
        )
    ]
    latest = [e.data for e in events if isinstance(e, SessionSettingsEvent)][-1]
    assert (latest.context_window, latest.window_asked, latest.changed) == (
        8000,
        False,
        ("provider.base_url",),
    )
