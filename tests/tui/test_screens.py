"""Snapshots of the screens that are not the transcript: no API key, and an approval."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.errors import MissingApiKeyError
from dsh.tui import DshApp, TuiOptions
from tests.tui.conftest import SIZE, Rig, approval_ready, repaint, settle, status_at_rest, submit


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
        await approval_ready(pilot)
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


@pytest.mark.parametrize("size", [(80, 24), (40, 30)])
@pytest.mark.parametrize("long_call", ["file", "command"])
def test_the_approval_prompt_fits_an_80_by_24_and_a_40_column_terminal(
    rig: Rig, long_call: str, size: tuple[int, int]
):
    # A 40-line new file, or a long command that wraps: the preview used to push the question
    # off the top of a classic 80x24 terminal, and the Deny button went off its right edge.
    import asyncio

    from textual.widgets import Button

    content = "".join(f"line {i}\n" for i in range(40))
    command = " && ".join(f"echo step{i}" for i in range(40)) + "\nls\npwd"
    call = (
        {"name": "write_file", "arguments": {"path": "big.txt", "content": content}}
        if long_call == "file"
        else {"name": "bash", "arguments": {"command": command}}
    )
    app = rig.app([{"toolCalls": [call]}], approval="ask")

    async def main() -> None:
        async with app.run_test(size=size) as pilot:  # 40 columns: the buttons stack
            await settle(pilot, lambda: app.ready)
            await submit(pilot, "write it")
            await approval_ready(pilot)
            screen = app.screen
            shown = [screen.query_one("#question"), *screen.query(Button)]
            await pilot.pause()
            await settle(pilot, lambda: all(screen.region.contains_region(w.region) for w in shown))
            await pilot.press("d")
            await settle(pilot, lambda: not app.running)

    asyncio.run(main())
