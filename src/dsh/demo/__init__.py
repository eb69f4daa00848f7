"""``dsh demo``: a keyless, scripted coding session on real files in a throwaway workspace.

The model is scripted (``script.yaml``); everything else is real: the agent loop, the tools
editing and running files, the event log in ``$DSH_HOME``. It needs no API key.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from dsh.agent.loop import Agent, AgentConfig, TurnResult
from dsh.agent.prompt import system_prompt
from dsh.config import DEFAULT_CONTEXT_WINDOW
from dsh.llm.scripted import ScriptedProvider, load_script
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools

PROMPTS = (
    "The tests in this project fail. Find the bug and fix it.",
    "Add a median() function with a test.",
)


def prepare_workspace(parent: Path | None = None) -> Path:
    """Copy the demo project into a fresh temporary directory."""
    workspace = Path(tempfile.mkdtemp(prefix="dsh-demo-", dir=parent))
    source = resources.files("dsh.demo") / "workspace"
    for name in ("calc.py", "test_calc.py"):
        (workspace / name).write_text(source.joinpath(name).read_text())
    return workspace


def run_demo(
    store: EventStore, *, workspace: Path, keep: bool = True
) -> tuple[Session, list[TurnResult]]:
    """Run the scripted session; returns the (closed) session and how each turn ended."""
    with resources.as_file(resources.files("dsh.demo") / "script.yaml") as script:
        entries = load_script(script)
    provider = ScriptedProvider(entries, model="demo", cache="deepseek")
    session = Session.create(store, cwd=workspace)
    agent = Agent(
        session,
        provider,
        ToolRegistry(default_tools()),
        ApprovalPolicy("auto"),  # the workspace is the demo's own throwaway copy
        config=AgentConfig(
            provider=provider.name,
            model="demo",
            system=system_prompt(workspace),
            context_window=DEFAULT_CONTEXT_WINDOW,
        ),
        workspace=workspace,
    )
    results: list[TurnResult] = []
    try:
        for prompt in PROMPTS:
            results.append(asyncio.run(agent.run_turn(prompt)))
    finally:
        session.close()
        if not keep:
            shutil.rmtree(workspace, ignore_errors=True)
    return session, results
