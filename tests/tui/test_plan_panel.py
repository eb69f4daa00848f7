"""The plan panel, driven by the pilot: a ``todo_write`` call pins its list above the composer
while an item is not done (head, marks, the item in progress named), a later call replaces it
and one with every item done takes it away; a resumed session shows its list at once; a short
terminal gives the panel's rows back to the transcript; the model's text is drawn safe."""

from __future__ import annotations

from typing import Any

from dsh.tui import DshApp
from dsh.tui.plan_panel import PlanPanel
from tests.tui.conftest import Rig, run_prompt
from tests.tui.test_pilot import run


def todos(*items: tuple[str, str]) -> dict[str, Any]:
    todo = [{"content": content, "status": status} for content, status in items]
    return {"toolCalls": [{"name": "todo_write", "arguments": {"todos": todo}}]}


PLAN = todos(("read the code", "completed"), ("write tests", "in_progress"), ("ship", "pending"))
DONE = todos(("read the code", "completed"), ("write tests", "completed"), ("ship", "completed"))
PINNED = [
    "plan · 1 of 3 done · now: write tests",
    "☑ read the code",
    "◐ write tests",
    "☐ ship",
]


def panel(app: DshApp) -> PlanPanel:
    return app.query_one(PlanPanel)


def shown(app: DshApp) -> list[str]:
    """The panel's lines as drawn (none while it is hidden)."""
    widget = panel(app)
    if not widget.display:
        return []
    return [line.text.rstrip() for line in widget.render_lines(widget.region.reset_offset)]


def test_a_todo_write_pins_the_plan_until_every_item_is_done(rig: Rig) -> None:
    app = rig.app([PLAN, {"text": "working on it"}, DONE, {"text": "all done"}])

    async def body(pilot: Any) -> None:
        assert shown(app) == []
        await run_prompt(pilot, "plan it")
        assert [line.strip() for line in shown(app)] == PINNED
        await run_prompt(pilot, "finish")
        assert shown(app) == [] and panel(app).rows == 0

    run(app, body)


def test_a_resumed_session_shows_its_plan_and_a_short_screen_hides_it(rig: Rig) -> None:
    first = rig.app([PLAN, {"text": "working on it"}])

    async def plan(pilot: Any) -> None:
        await run_prompt(pilot, "plan it")

    run(first, plan)
    assert first.last_session_id is not None

    async def resumed(pilot: Any) -> None:
        assert [line.strip() for line in shown(again)] == PINNED

    again = rig.app([], resume=first.last_session_id)
    run(again, resumed)

    async def short(pilot: Any) -> None:
        assert panel(small).rows == 4
        assert shown(small) == []  # 14 rows: the transcript would keep fewer than 8 beside it

    small = rig.app([], resume=first.last_session_id)
    run(small, short, size=(80, 14))


def test_the_models_text_is_drawn_safe(rig: Rig) -> None:
    hostile = todos(("red \x1b[31mtext\x1b[0m\nsecond line", "in_progress"))
    app = rig.app([hostile, {"text": "ok"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "plan it")
        lines = [line.strip() for line in shown(app)]
        assert lines == ["plan · 0 of 1 done · now: red text …", "◐ red text …"]

    run(app, body)
