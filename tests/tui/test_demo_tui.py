"""``dsh demo --tui``: the demo's four prompts typed in the real app, in the demo's window,
compact (one marker; the status bar's pass indicator is clear again once the turn ends) and
recall (history_search, then a history_read that succeeds), as the headless demo does."""

from __future__ import annotations

from typing import Any

import msgspec

from dsh.demo import PROMPTS, demo_script, demo_settings, prepare_workspace
from dsh.events import CompactionEndEvent, ToolCallEvent, ToolResultEvent
from dsh.tui import DshApp, TuiOptions
from dsh.tui.factories import settings_route_factory
from tests.tui.conftest import Rig, run_prompt
from tests.tui.test_pilot import logged, run, text_of


def test_the_demo_compacts_and_recalls_in_the_ui(rig: Rig, tmp_path):
    settings = demo_settings()
    tools = msgspec.structs.replace(settings.tools, approval="auto")
    settings = msgspec.structs.replace(settings, tools=tools)
    with demo_script() as script:
        route_factory = settings_route_factory(settings, script)
        route_factory(None)  # the script is read now
        options = TuiOptions(
            settings=settings,
            store=rig.store,
            workspace=prepare_workspace(tmp_path),
            route_factory=route_factory,
            cursor_blink=False,
        )
        app = DshApp(options)
        shown: list[str | None] = []

        async def body(pilot: Any) -> None:
            for prompt in PROMPTS:
                await run_prompt(pilot, prompt)
                shown.append(app.status_bar.info.compaction)
            text = text_of(app)
            assert text.count("… earlier context was compacted …") == 1
            assert "history_read" in text and "line 3, in <module>" in text
            events = logged(app)
            assert sum(isinstance(e, CompactionEndEvent) for e in events) >= 2
            calls = [e.data for e in events if isinstance(e, ToolCallEvent)]
            assert [c.name for c in calls[-2:]] == ["history_search", "history_read"]
            (read,) = [
                e.data.message.content[0]
                for e in events
                if isinstance(e, ToolResultEvent)
                and e.data.message.content[0].tool_call_id == calls[-1].call_id
            ]
            assert not read.is_error
            assert "line 3, in <module>" in "".join(b.text for b in read.content)

        run(app, body)
    assert shown == [None] * len(PROMPTS)  # the indicator cleared once the pass ended
