"""A keyless rig for the TUI: the real app and agent, a scripted provider, a temp store."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from dsh.agent import Agent, AgentConfig
from dsh.agent.hooks import compaction_hooks
from dsh.agent.loop import StreamListener
from dsh.agent.runtime import Route
from dsh.compaction import BasicBackend, CompactionEngine, ExtractiveSummarizer
from dsh.compaction.summarizer import Summarizer
from dsh.config import CompactionSettings, Settings, ToolSettings
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.llm.types import Provider
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalMode, ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools
from dsh.tui import DshApp, TuiOptions
from dsh.tui.approval import QUIET_SECONDS, ApprovalScreen

SYSTEM = "You are dsh, under test."
SIZE = (100, 32)


class ManualClock:
    """A clock the test moves by hand, so nothing timed by it races the machine."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Rig:
    """Builds apps over one store and workspace; each app gets the scripted model and a
    ``ManualClock`` (``app.clock``: the approval prompt's wait, a second ctrl+c or quit)."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.workspace = root / "ws"
        self.workspace.mkdir(parents=True, exist_ok=True)
        (self.workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")
        self.store = JsonlStore(self.home)
        self.cache: Literal["deepseek"] | None = None
        """The scripted provider's simulated prompt cache (off: screens do not depend on it)."""

    def settings(self, approval: ApprovalMode = "auto", **compaction: Any) -> Settings:
        return Settings(
            compaction=CompactionSettings(backend="basic", **compaction),
            tools=ToolSettings(approval=approval),
        )

    def app(
        self,
        script: list[dict[str, Any]],
        *,
        resume: str | None = None,
        window: int = 128_000,
        approval: ApprovalMode = "auto",
        auto_compact: bool = False,
        pass_summarizer: Summarizer | None = None,
        wrap_provider: Callable[[ScriptedProvider], Provider] | None = None,
        route_notice: str | None = None,
        agent_config: dict[str, Any] | None = None,
        started_in: Path | None = None,
        workspace_from_flag: bool = False,
        **compaction: Any,
    ) -> DshApp:
        """The app over a scripted model; ``agent_config``: more ``AgentConfig`` fields for its
        agents (``attach_mentions``, ``params``); ``auto_compact``: its agents compact under
        pressure, with ``pass_summarizer`` (default: the extractive one); ``started_in``: the
        directory ``dsh`` was started in, when it is not the workspace (``TuiOptions``)."""
        settings = self.settings(approval, **compaction)
        scripted = ScriptedProvider(parse_script(script), model="scripted", cache=self.cache)
        self.provider = scripted
        provider: Provider = wrap_provider(scripted) if wrap_provider else scripted

        def route(model: str | None) -> Route:
            return Route(provider, model or "scripted", window, route_notice)

        def agent(
            session: Session, route_: Route, policy: ApprovalPolicy, on_stream: StreamListener
        ) -> Agent:
            built = Agent(
                session,
                route_.provider,
                ToolRegistry(default_tools()),
                policy,
                config=AgentConfig(
                    provider="scripted",
                    model=route_.model,
                    system=SYSTEM,
                    context_window=route_.context_window,
                    retry_base_delay=0.0,
                    **(agent_config or {}),
                ),
                workspace=self.workspace,
                on_stream=on_stream,
            )
            if auto_compact:
                ids = itertools.count(1)
                engine = CompactionEngine(
                    session,
                    BasicBackend(pass_summarizer or ExtractiveSummarizer(), settings.compaction),
                    settings.compaction,
                    new_id=lambda: f"pass{next(ids)}",
                )
                pre_step, overflow = compaction_hooks(engine)
                built.pre_step_hooks.append(pre_step)
                built.overflow_handler = overflow
            return built

        options = TuiOptions(
            settings=settings,
            store=self.store,
            workspace=self.workspace,
            resume=resume,
            route_factory=route,
            agent_factory=agent,
            cursor_blink=False,
            started_in=started_in,
            workspace_from_flag=workspace_from_flag,
        )
        app = DshApp(options)
        app.clock = ManualClock()
        return app


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


SETTLE_TIMEOUT = 30.0
"""How long ``settle`` waits before it fails. Only a guard against a hang: the tests never
depend on how long something takes, and a loaded 2-core CI machine can be many times slower
than a desk."""

WAITING_NOTICE = "waiting for the model"
"""How the status bar's notice for a silent model call starts (``dsh.agent.waiting``)."""


async def settle(
    pilot: Any, condition: Callable[[], bool], *, timeout: float = SETTLE_TIMEOUT
) -> None:
    """Pause the pilot until ``condition()`` holds (or fail after ``timeout`` seconds)."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.01)


async def submit(pilot: Any, text: str) -> None:
    """Type ``text`` in the prompt box and press enter."""
    app = pilot.app
    app.prompt_box.value = text
    await pilot.press("enter")


def status_at_rest(app: DshApp) -> bool:
    """Nothing already under way can still change the status bar: no re-measure of the
    context use is scheduled (``status_settled``), no model call is waiting for its first
    event, and no "waiting for the model (N s)" notice is left over from a call that has
    answered (the app's poll puts "working…" back on its next tick, ``POLL_EVERY`` seconds
    later). The notice appears only after a second of silence, so it shows in a snapshot only
    on a machine loaded enough to stall a scripted model call that long."""
    busy = app.status_bar.info.busy or ""
    return (
        app.status_settled
        and app.controller.waiting_since is None
        and not busy.startswith(WAITING_NOTICE)
    )


async def repaint(pilot: Any) -> None:
    """Repaint the screen on top from every widget as it is now, those of a screen under a
    modal included. Textual repaints a screen under a modal on that screen's own update timer,
    which the pilot's pauses do not drive: a change there (the status bar's re-measure while an
    approval is up) could reach a snapshot after it was taken on a loaded machine."""
    pilot.app.screen.refresh()
    await pilot.pause()


async def approval_ready(pilot: Any) -> ApprovalScreen:
    """Wait for the approval prompt and for it to take keys: the app's ``ManualClock`` moves
    past the prompt's quiet wait, and the prompt wakes its buttons (the first focused)."""
    app = pilot.app
    await settle(pilot, lambda: isinstance(app.screen, ApprovalScreen))
    screen = app.screen
    assert isinstance(screen, ApprovalScreen)
    app.clock.advance(QUIET_SECONDS)
    await settle(pilot, lambda: not screen.waiting and screen.query_one("#once").has_focus)
    return screen


async def answer_approval(pilot: Any, key: str) -> None:
    """Answer the approval prompt with ``key`` once it takes keys (``approval_ready``)."""
    await approval_ready(pilot)
    await pilot.press(key)


async def run_prompt(pilot: Any, text: str) -> None:
    """Send a prompt and wait until its turn has ended and the status bar is at rest."""
    await submit(pilot, text)
    await settle(pilot, lambda: not pilot.app.running and status_at_rest(pilot.app))
    await pilot.pause()


@pytest.fixture
def patient_quit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A quit waits as long as ``settle`` would for the cancelled turn or ``/compact`` to
    close its log entries. The app's ``QUIT_GRACE`` (seconds) bounds that wait for people; a
    test that checks what the log holds after a quit must not depend on the machine beating
    it."""
    import dsh.tui.app

    monkeypatch.setattr(dsh.tui.app, "QUIT_GRACE", SETTLE_TIMEOUT)


Driver = Callable[[Any], Awaitable[None]]
