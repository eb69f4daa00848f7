"""Replies that all number their tool calls from ``call_0``, in the TUI: a session whose
process died during the second ``call_0`` opens with each card showing its own result."""

from __future__ import annotations

import asyncio

from tests.same_call_ids import FIRST_OUTPUT, crash_in_second_reply
from tests.tui.conftest import SIZE, Rig, settle


def test_each_call_0_card_shows_its_own_output_and_status_after_a_crash(rig: Rig) -> None:
    session_id = crash_in_second_reply(rig.store, rig.workspace)
    app = rig.app([], resume=session_id)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            cards = [b for b in app.transcript.model.blocks if b.kind in ("tool", "result")]
            shown = [(b.kind, b.label, b.result) for b in cards]
            assert [(kind, label) for kind, label, _ in shown] == [
                ("tool", "read_file"),
                ("tool", "list_dir"),
            ]
            first, second = shown[0][2], shown[1][2]
            assert first is not None and FIRST_OUTPUT in first.text and not first.is_error
            assert second is not None and second.is_error
            assert "TOOL_OUTCOME_UNKNOWN" in second.text
            lines = app.transcript.rendered_lines()
            at = {
                name: next(i for i, line in enumerate(lines) if f"▸ {name}" in line)
                for name in ("read_file", "list_dir")
            }
            assert lines[at["read_file"] + 1].startswith("    └ ")
            assert FIRST_OUTPUT in lines[at["read_file"] + 1]
            assert lines[at["list_dir"] + 1].startswith("    └ [TOOL_OUTCOME_UNKNOWN]")

    asyncio.run(main())
