"""Live equals replay for ``!cmd`` output: once the prompt carrying it is sent, the screen shows
it once, quoted in that prompt, exactly as the same log opened cold shows it (the note that
showed it until then is taken off; it used to stay, so the output showed twice).

The two snapshot fixtures are a pair and must change together: ``test_live_shell_snapshot.svg``
(the app ran the command and sent the prompt) and ``test_replayed_shell_snapshot.svg`` (that
log opened cold); a third test checks the two stored files are byte-identical."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from dsh.tui import DshApp
from tests.tui.conftest import SIZE, Rig, run_prompt, settle, status_at_rest, submit
from tests.tui.test_pilot import text_of

SNAPSHOTS = Path(__file__).parent / "__snapshots__" / Path(__file__).stem


def live_app(rig: Rig) -> DshApp:
    return rig.app([{"text": "It printed out-put."}])


async def drive(pilot: Any) -> None:
    app = pilot.app
    await settle(pilot, lambda: app.ready)
    await submit(pilot, "!printf 'out-%s\\n' put")
    await settle(pilot, lambda: not app.running and "out-put" in text_of(app))
    await run_prompt(pilot, "what did it print?")


def recorded(rig: Rig) -> str:
    app = live_app(rig)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await drive(pilot)

    asyncio.run(main())
    assert app.last_session_id is not None
    return app.last_session_id


def test_live_shell_snapshot(snap_compare, rig: Rig):
    assert snap_compare(live_app(rig), terminal_size=SIZE, run_before=drive)


def test_replayed_shell_snapshot(snap_compare, rig: Rig):
    cold = rig.app([], resume=recorded(rig))

    async def opened(pilot: Any) -> None:
        await settle(pilot, lambda: cold.ready and status_at_rest(cold))
        await pilot.pause()

    assert snap_compare(cold, terminal_size=SIZE, run_before=opened)


def test_the_live_and_replayed_shell_fixtures_are_byte_identical():
    live = SNAPSHOTS / "test_live_shell_snapshot.svg"
    replayed = SNAPSHOTS / "test_replayed_shell_snapshot.svg"
    assert live.read_bytes() == replayed.read_bytes()
