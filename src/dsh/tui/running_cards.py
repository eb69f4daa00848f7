"""What a live tool card without its result says under it: ``running… 12 s`` (how long since its
call was logged, or since its approval was given; nothing for the first second), or ``waiting
for your approval`` while the approval prompt for it is open.

It is transient state: a session opened again shows its cards with their results, and a card
with none as ``running…`` (``dsh.tui.blocks``). The app looks again every ``POLL_EVERY`` seconds
while work runs (``tick``); a card is drawn again only when what it says changed, so at most once
a second. Its time is the app's clock, which a test sets (a snapshot never shows a count).

Under that, a card shows the last lines its command printed so far (``Block.tail``), as
``dsh.agent.tool_progress`` tells them, at most ten times a second; they go with the result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dsh.agent.tool_progress import RUNNING_OUTPUT, Lines
from dsh.tui.blocks import Block
from dsh.tui.diffs import parse_arguments
from dsh.tui.transcript_view import TranscriptView

RUNNING = "running…"
ASKING = "waiting for your approval"
SHOWN_AFTER = 1.0
"""Seconds before a card shows how long it has run."""


def running_text(seconds: float) -> str:
    """What a card that has run ``seconds`` says (its count from the first second on)."""
    return RUNNING if seconds < SHOWN_AFTER else f"{RUNNING} {int(seconds)} s"


class RunningCards:
    """The live cards without a result yet, each with the time it has been running since."""

    def __init__(self, view: TranscriptView, clock: Callable[[], float]) -> None:
        self.view = view
        self.clock = clock
        self._since: dict[Block, float] = {}
        self._asking: Block | None = None
        RUNNING_OUTPUT.watch(self.printed)  # held weakly: it goes with the app

    def printed(self, session_id: str, lines: dict[int, Lines]) -> None:
        """Running calls printed (``lines`` by the seq of their call): their cards show it."""
        changed: set[int] = set()
        for block in self._since:
            shown = lines.get(block.seq)
            index = self.view.model.index_of(block)
            if shown is not None and block.result is None and index is not None:
                block.tail = shown
                changed.add(index)
        if changed:
            self.view.restyle(changed)

    def added(self, blocks: list[Block]) -> None:
        """Blocks the view just added: a tool card among them runs from now."""
        now = self.clock()
        for block in blocks:
            if block.kind == "tool" and block.result is None:
                self._since[block] = now

    def asking(self, tool: str, args: Mapping[str, Any]) -> None:
        """The approval prompt for a call of ``tool`` with ``args`` opened: its card says so."""
        cards = [b for b in self._since if b.label == tool and b.result is None]
        same = [b for b in cards if parse_arguments(b.arguments) == dict(args)]
        self._asking = next(iter(same or cards), None)
        self.tick()

    def answered(self) -> None:
        """The approval prompt closed: its card runs from now (or has its result)."""
        if self._asking is not None:
            self._since[self._asking] = self.clock()
            self._asking = None
        self.tick()

    def tick(self) -> None:
        """Say again what each card says, drawing again those that changed."""
        now = self.clock()
        changed: set[int] = set()
        for block, since in list(self._since.items()):
            index = self.view.model.index_of(block)
            if block.result is not None or index is None:  # done, or another session shows
                del self._since[block]
                block.status, block.tail = None, ()
                continue
            status = ASKING if block is self._asking else running_text(now - since)
            if status != (block.status or RUNNING):
                block.status = status
                changed.add(index)
        if changed:
            self.view.restyle(changed)
