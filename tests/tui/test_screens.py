"""Snapshots of the screens that are not the transcript: no API key, and an approval."""

from __future__ import annotations

from typing import Any

from dsh.errors import MissingApiKeyError
from dsh.tui import DshApp, TuiOptions
from dsh.tui.approval import ApprovalScreen
from tests.tui.conftest import SIZE, Rig, repaint, settle, status_at_rest, submit


def test_no_key_screen_snapshot(snap_compare, rig: Rig):
    def route(model: str | None) -> Any:
        raise MissingApiKeyError("DEEPSEEK_API_KEY", provider="deepseek")

    options = TuiOptions(
        settings=rig.settings(),
        store=rig.store,
        workspace=rig.workspace,
        route_factory=route,
        cursor_blink=False,
    )
    assert snap_compare(DshApp(options), terminal_size=SIZE)


def test_approval_modal_snapshot(snap_compare, rig: Rig):
    app = rig.app(
        [{"toolCalls": [{"name": "bash", "arguments": {"command": "rm -rf build/"}}]}],
        approval="ask",
    )

    async def ask(pilot: Any) -> None:
        await submit(pilot, "clean the build directory")
        await settle(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await settle(pilot, lambda: status_at_rest(app))
        await repaint(pilot)  # the status bar under the modal, as it is now

    assert snap_compare(app, terminal_size=SIZE, run_before=ask)


def test_the_no_key_screen_names_every_way_in():
    from dsh.tui.no_key import no_key_text

    text = no_key_text(MissingApiKeyError("DEEPSEEK_API_KEY", provider="deepseek"))
    for way in (
        "export DEEPSEEK_API_KEY=",
        "export ANTHROPIC_API_KEY=",
        "dsh --provider anthropic",
        "dsh --base-url http://localhost:11434/v1",
        "Ollama",
        "dsh demo --tui",
        "dsh --script FILE",
    ):
        assert way in text, way
