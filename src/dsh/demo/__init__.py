"""``dsh demo``: a keyless, scripted coding session on real files in a throwaway workspace.

The model is scripted (``script.yaml``); everything else is real: the agent loop, the tools
editing and running files, recallable compaction (the extractive summariser) and the recall
tools, the event log in ``$DSH_HOME``. It needs no API key. The demo runs in a small context
window (``DEMO_OVERRIDES``) so that its third turn crosses the compaction threshold and its
fourth recalls a detail of the first from the compacted history.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from dsh.agent.loop import TurnResult
from dsh.agent.runtime import resolve_route
from dsh.agent.session_runner import record_settings
from dsh.agent.wiring import build_agent
from dsh.config import Settings, validate_settings
from dsh.events import Event
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy

PROMPTS = (
    "The tests in this project fail. Find the bug and fix it.",
    "Add a median() function with a test.",
    "Check add() on a grid of inputs and show me the output.",
    "Show me the traceback the tests printed before your fix.",
)

DEMO_WINDOW = 6000
"""The demo's context window in tokens: small enough that turn 3 crosses the threshold."""

DEMO_OVERRIDES: dict[str, dict[str, Any]] = {
    "provider": {"name": "scripted", "model": "demo", "context_window": DEMO_WINDOW},
    "compaction": {
        "backend": "recallable",
        "summarizer": "extractive",
        "chunk_tokens": 800,
        "stub_tokens": 120,
        "state_max_tokens": 600,
        "stub_region_ratio": 0.15,  # a tiny window: room for the stubs the demo shows
        "prune_threshold_chars": 40_000,  # turn 3's output is compacted, not pruned
    },
}
"""The settings the demo runs with (on top of the defaults; ``dsh demo --tui`` puts them over
the person's own configuration)."""


def demo_settings() -> Settings:
    """The defaults with ``DEMO_OVERRIDES``: the headless demo ignores the person's config."""
    settings = msgspec.convert(DEMO_OVERRIDES, Settings)
    validate_settings(settings)
    return settings


@contextmanager
def demo_script() -> Iterator[Path]:
    """The path of the demo's script file while the context is open."""
    with resources.as_file(resources.files("dsh.demo") / "script.yaml") as script:
        yield script


def lasting_demo_script() -> Path | None:
    """The demo's script as a file that outlasts ``demo_script`` (the installed package's own),
    or None when the package is not files on disk (a zip: ``demo_script`` gives a temporary
    copy)."""
    script = resources.files("dsh.demo") / "script.yaml"
    return script if isinstance(script, Path) and script.is_file() else None


def prepare_workspace(parent: Path | None = None) -> Path:
    """Copy the demo project into a fresh temporary directory."""
    workspace = Path(tempfile.mkdtemp(prefix="dsh-demo-", dir=parent))
    source = resources.files("dsh.demo") / "workspace"
    for name in ("calc.py", "test_calc.py"):
        (workspace / name).write_text(source.joinpath(name).read_text())
    return workspace


@contextmanager
def throwaway_workspace(*, keep: bool, parent: Path | None = None) -> Iterator[Path]:
    """A fresh copy of the demo project (``prepare_workspace``) while the context is open;
    removed when it closes, however it closes (an error, Ctrl-C, a ``SystemExit`` with the UI's
    code), unless ``keep``. Both faces of ``dsh demo`` run in one."""
    workspace = prepare_workspace(parent)
    try:
        yield workspace
    finally:
        if not keep:
            shutil.rmtree(workspace, ignore_errors=True)


def run_demo(
    store: EventStore,
    *,
    workspace: Path,
    keep: bool = True,
    on_event: Callable[[Event], None] | None = None,
) -> tuple[Session, list[TurnResult]]:
    """Run the scripted session; returns the (closed) session and how each turn ended.
    ``on_event`` sees every event as it is logged (the CLI shows progress with it)."""
    settings = demo_settings()
    with demo_script() as script:
        route = resolve_route(settings, script=script)
    session = Session.create(store, cwd=workspace)
    if on_event is not None:
        session.subscribe(on_event)
    results: list[TurnResult] = []
    try:
        agent = build_agent(
            session,
            settings,
            route,
            workspace=workspace,
            policy=ApprovalPolicy("auto"),  # the workspace is the demo's own throwaway copy
        )
        record_settings(session, settings, route, str(workspace))  # as every face does
        for prompt in PROMPTS:
            results.append(asyncio.run(agent.run_turn(prompt)))
    finally:
        session.close()
        if not keep:
            shutil.rmtree(workspace, ignore_errors=True)
    return session, results
