"""``dsh --resume``: the TUI reopens a session with the settings it recorded (window, budgets),
not with what the config says today (driven through the real app's pilot)."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh.events import RequestContextEvent, SessionSettingsEvent
from dsh.tui import DshApp
from dsh.tui.no_key import NoKeyScreen
from tests.tui.conftest import SIZE, Rig, run_prompt, settle


def _drive(app: DshApp, prompt: str | None) -> list[Any]:
    """Open ``app``, send ``prompt`` (if any); returns the session's events."""

    async def main() -> list[Any]:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready or isinstance(app.screen, NoKeyScreen))
            if prompt is not None:
                await run_prompt(pilot, prompt)
            assert app.controller.session is not None
            return list(app.controller.session.events)

    return asyncio.run(main())


def test_a_resumed_session_keeps_its_recorded_window_and_budgets(rig: Rig):
    first = rig.app([{"text": "first"}], window=16_000, chunk_tokens=1000)
    logged = _drive(first, "hello")
    (recorded,) = [e for e in logged if isinstance(e, SessionSettingsEvent)]
    assert (recorded.data.context_window, recorded.data.compaction.chunk_tokens) == (16_000, 1000)
    session_id = rig.store.list()[-1].id
    # the configuration changed since: a 128k route and the default chunk size
    reopened = rig.app([{"text": "first"}, {"text": "second"}], resume=session_id)
    events = _drive(reopened, "again")
    assert reopened.controller.window == 16_000
    assert reopened.status_bar.info.context_window == 16_000
    assert reopened.controller.settings.compaction.chunk_tokens == 1000
    windows = [e.data.context_window for e in events if isinstance(e, RequestContextEvent)]
    assert set(windows) == {16_000}  # the turn after the reopen ran in the recorded window
    assert len([e for e in events if isinstance(e, SessionSettingsEvent)]) == 1


def test_resume_in_the_ui_keeps_the_recorded_model_and_refuses_another_provider(rig: Rig):
    from dsh.agent import session_settings
    from dsh.config import Settings
    from dsh.surface import Session
    from tests.tui.conftest import submit

    def stored(provider: str, model: str) -> str:
        with Session.create(rig.store, cwd=str(rig.workspace)) as session:
            snapshot = session_settings.snapshot(
                Settings(), provider, model, 16_000, str(rig.workspace)
            )
            session_settings.record(session, snapshot)
            return session.id

    same_route, other_provider = stored("scripted", "recorded-model"), stored("deepseek", "chat")
    app = rig.app([])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await submit(pilot, f"/resume {other_provider}")
            shown = " ".join("\n".join(app.transcript.rendered_lines()).split())
            assert f"session {other_provider} runs on provider deepseek" in shown
            assert app.controller.session is None  # nothing was opened
            await submit(pilot, f"/resume {same_route}")
            await settle(pilot, lambda: app.controller.session is not None)
            assert (app.controller.model, app.controller.window) == ("recorded-model", 16_000)

    asyncio.run(main())


def test_a_recorded_window_under_the_bound_gives_way_to_the_route_and_is_said_once(rig: Rig):
    import msgspec

    from dsh.agent import session_settings
    from dsh.surface import Session

    _drive(rig.app([{"text": "first"}], window=16_000), "hello")
    session_id = rig.store.list()[-1].id
    with Session.open(rig.store, session_id, writable=True) as session:  # an older dsh's record
        current = session_settings.latest(session)
        assert current is not None
        session.append(msgspec.structs.replace(current, context_window=512))
    log = rig.store.root / session_id / "session.jsonl"
    before = log.read_bytes()
    reopened = rig.app([{"text": "second"}], resume=session_id)
    events = _drive(reopened, "again")
    assert reopened.controller.window == 128_000  # the route's, not the recorded 512
    assert reopened.status_bar.info.context_window == 128_000
    windows = [e.data.context_window for e in events if isinstance(e, RequestContextEvent)]
    assert windows[-1] == 128_000
    said = [w for w in reopened.warnings.entries if "no longer valid" in w.text]
    assert [(w.count, "provider.context_window 512 -> (unset)" in w.text) for w in said] == [
        (1, True)
    ]
    assert log.read_bytes().startswith(before)
