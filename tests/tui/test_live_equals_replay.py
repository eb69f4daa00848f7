"""Live equals replay (docs/architecture.md, "The human transcript"): a session compacted while
the app watched renders byte-identically to the same log opened cold.

The two snapshot fixtures below are a pair and must change together:
``__snapshots__/test_live_equals_replay/test_live_compaction_snapshot.svg`` (the app watched the
passes land) and ``…/test_replayed_compaction_snapshot.svg`` (the stored log opened cold). A
third test checks that the two stored files are byte-identical, and a fourth compares the
rendered lines and the exported screens directly, without stored files.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.tui import scenarios
from tests.tui.conftest import Rig

SNAP_SIZE = (100, 64)
SNAPSHOTS = Path(__file__).parent / "__snapshots__" / Path(__file__).stem


def test_live_compaction_snapshot(snap_compare, rig: Rig):
    """Fixture 1 of the pair: the screen after two passes landed while the app watched."""
    app = scenarios.compaction_app(rig)
    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=scenarios.drive)


def test_replayed_compaction_snapshot(snap_compare, rig: Rig):
    """Fixture 2 of the pair: the same log opened cold; byte-identical to fixture 1."""
    session_id, _ = scenarios.record(rig, SNAP_SIZE)
    assert snap_compare(scenarios.cold_app(rig, session_id), terminal_size=SNAP_SIZE)


def test_the_live_and_replayed_fixtures_are_byte_identical():
    live = SNAPSHOTS / "test_live_compaction_snapshot.svg"
    replayed = SNAPSHOTS / "test_replayed_compaction_snapshot.svg"
    assert live.read_bytes() == replayed.read_bytes()


def test_live_and_cold_render_the_same_lines_and_the_same_screen(rig: Rig):
    live_app = scenarios.compaction_app(rig)
    screens: dict[str, str] = {}
    lines: dict[str, list[str]] = {}

    async def live() -> str:
        async with live_app.run_test(size=SNAP_SIZE) as pilot:
            await scenarios.drive(pilot)
            await pilot.pause()
            screens["live"] = live_app.export_screenshot()
            lines["live"] = live_app.transcript.rendered_lines()
            assert live_app.controller.session is not None
            return live_app.controller.session.id

    session_id = asyncio.run(live())
    cold_app = scenarios.cold_app(rig, session_id)

    async def cold() -> None:
        async with cold_app.run_test(size=SNAP_SIZE) as pilot:
            await pilot.pause()
            screens["cold"] = cold_app.export_screenshot()
            lines["cold"] = cold_app.transcript.rendered_lines()

    asyncio.run(cold())
    assert lines["live"] == lines["cold"]
    assert any("earlier context was compacted" in line for line in lines["cold"])
    assert screens["live"] == screens["cold"]
