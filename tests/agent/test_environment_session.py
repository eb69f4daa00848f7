"""The environment of a session's system prompt is detected once per opened session: every
request of its turns, and of an agent built again on it (``/model``), states the same one; a
session opened again detects afresh, and a new date there is a logged ``resume`` header."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.environment import Environment, GitFacts
from dsh.agent.runtime import Route
from dsh.agent.session_runner import SessionRunner, SettingsWiring
from dsh.config import Settings, ToolSettings
from dsh.events import RequestHeaderEvent
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.store import JsonlStore
from dsh.tools.approval import ApprovalAnswer

SCRIPT = [
    {"toolCalls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
    {"text": "one file"},
    {"text": "still one"},
    {"text": "another day"},
]


async def never_asked(tool: str, args: dict[str, Any], protected: str | None) -> ApprovalAnswer:
    raise AssertionError("no tool asks under auto")


class Detections:
    """A ``detect`` whose every call is another day, so a second call would show."""

    def __init__(self) -> None:
        self.workspaces: list[Path] = []

    def __call__(self, workspace: Path) -> Environment:
        self.workspaces.append(workspace)
        day = date(2026, 5, 1) + timedelta(days=len(self.workspaces) - 1)
        return Environment("Linux", "bash 5.2", day, GitFacts("main"))


@pytest.fixture
def detections(monkeypatch: pytest.MonkeyPatch) -> Detections:
    fake = Detections()
    monkeypatch.setattr("dsh.agent.wiring.detect", fake)
    return fake


def test_one_detection_per_opened_session_and_one_prompt_across_its_requests(
    tmp_path: Path, detections: Detections
):
    provider = ScriptedProvider(parse_script(SCRIPT), model="scripted")
    settings = Settings(tools=ToolSettings(approval="auto"))
    wiring = SettingsWiring(settings, lambda: Route(provider, "scripted", 8000))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = JsonlStore(tmp_path / "home")
    runner = SessionRunner.create(store, workspace, wiring, approver=never_asked)
    asyncio.run(turn_on(runner, "what is here?"))  # two requests: the tool call, the answer
    runner.reset_agent()  # another agent on the same opened session, as /model builds
    asyncio.run(turn_on(runner, "and now?"))
    assert detections.workspaces == [workspace]
    systems = {request.system for request in provider.requests}
    assert len(provider.requests) == 3 and len(systems) == 1
    assert "- Today's date: 2026-05-01" in systems.pop()  # type: ignore[operator]
    headers = runner.session.of_type(RequestHeaderEvent)
    assert [h.data.reason for h in headers] == ["initial"]
    session_id = runner.session.id
    runner.close()

    reopened = SessionRunner.open(store, session_id, wiring, approver=never_asked)
    asyncio.run(turn_on(reopened, "a day later?"))
    assert detections.workspaces == [workspace, workspace]
    headers = reopened.session.of_type(RequestHeaderEvent)
    assert [h.data.reason for h in headers] == ["initial", "resume"]
    first, second = (h.data.header.system or "" for h in headers)
    assert "- Today's date: 2026-05-02" in second
    assert first.replace("2026-05-01", "2026-05-02") == second
    reopened.close()


async def turn_on(runner: SessionRunner, prompt: str) -> None:
    result = await runner.start_turn(prompt)
    assert result.reason == "completed"
