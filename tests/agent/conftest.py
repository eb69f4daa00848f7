"""Builders for driving the real loop with the keyless scripted provider."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dsh.agent import Agent, AgentConfig, system_prompt
from dsh.bench.runner import BENCH_ENVIRONMENT
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools


class Harness:
    def __init__(self, tmp_path: Path) -> None:
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        self.store = JsonlStore(tmp_path / "home")
        self.session = Session.create(self.store, cwd=self.workspace)

    def agent(
        self,
        script: list[dict[str, Any]],
        *,
        policy: str = "auto",
        chunk_size: int = 0,
        **config: Any,
    ) -> Agent:
        """An agent over this session with a scripted model (``chunk_size``: stream each block
        in pieces of that many characters) and the default tools."""
        self.provider = ScriptedProvider(
            parse_script(script), model="scripted", cache="deepseek", chunk_size=chunk_size
        )
        return Agent(
            self.session,
            self.provider,
            ToolRegistry(default_tools()),
            ApprovalPolicy(policy),  # type: ignore[arg-type]
            config=AgentConfig(
                **{
                    "provider": "scripted",
                    "model": "scripted",
                    "system": system_prompt(self.workspace, BENCH_ENVIRONMENT),
                    "context_window": 128_000,
                    "retry_base_delay": 0.0,
                    **config,
                }
            ),
            workspace=self.workspace,
        )

    def types(self) -> list[str]:
        return [type(e).__struct_config__.tag for e in self.session.events]  # type: ignore[union-attr]

    def reopen(self) -> Session:
        self.session.close()
        return Session.open(self.store, self.session.id)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)
