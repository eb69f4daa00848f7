"""The compaction scenario the pins and the live/replay snapshots share.

Turn i asks for ``f{i}.txt``; the model reads it (a tool card) and answers. The window is small,
so the agent's pressure hook compacts while the app watches (results longer than the prune
threshold are pruned first). Everything is deterministic: the same prompts give the same log.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dsh.events import (
    CompactionPruneEvent,
    Event,
    event_type_of,
    is_checkpoint_event,
)
from dsh.tui import DshApp
from tests.tui.conftest import Rig, run_prompt

TURNS = 6
WINDOW = 4096
"""The smallest window dsh runs in (``MIN_CONTEXT_WINDOW``): a reopen keeps it."""
COMPACTION = {"prune_threshold_chars": 6000, "prune_head_chars": 300, "prune_tail_chars": 100}


def write_files(rig: Rig) -> None:
    for i in range(TURNS):
        rows = [f"row {i}.{k} " + "data " * 12 for k in range(100 if i % 2 else 50)]
        (rig.workspace / f"f{i}.txt").write_text("\n".join(rows))


def script() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for i in range(TURNS):
        entry: dict[str, Any] = {
            "text": f"Reading file {i}.",
            "toolCalls": [{"name": "read_file", "arguments": {"path": f"f{i}.txt"}}],
        }
        if i == 1:
            entry["reasoning"] = "The second file; read it before answering."
        entries += [entry, {"text": f"File {i} holds the numbers of batch {i}."}]
    return entries


def compaction_app(rig: Rig) -> DshApp:
    write_files(rig)
    return rig.app(script(), window=WINDOW, auto_compact=True, **COMPACTION)


def cold_app(rig: Rig, session_id: str) -> DshApp:
    """The same route and settings, opening the stored log (no model call is made)."""
    return rig.app([], resume=session_id, window=WINDOW, **COMPACTION)


async def drive(pilot: Any) -> None:
    for i in range(TURNS):
        await run_prompt(pilot, f"Show me f{i}.txt")


def record(rig: Rig, size: tuple[int, int]) -> tuple[str, list[str]]:
    """Run the scenario in an app headless; returns (session id, rendered lines)."""
    app = compaction_app(rig)

    async def main() -> tuple[str, list[str]]:
        async with app.run_test(size=size) as pilot:
            await drive(pilot)
            assert app.controller.session is not None
            return app.controller.session.id, app.transcript.rendered_lines()

    return asyncio.run(main())


def passes(events: list[Event]) -> int:
    """Landed passes: distinct compaction ids of checkpoints (one region per basic pass)."""
    return len({e.data.source.compaction_id for e in events if is_checkpoint_event(e)})


def prunes(events: list[Event]) -> int:
    return sum(isinstance(e, CompactionPruneEvent) for e in events)


def types(events: list[Event]) -> list[str]:
    return [event_type_of(e) for e in events]
