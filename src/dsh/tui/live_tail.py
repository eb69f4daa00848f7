"""The transcript's live tail: what it shows after its logged blocks, before that is logged.

Two things, in this order. The prompt a turn was sent with, from the moment it is sent until its
``user/message`` is logged: the loop logs a prompt only after the turn's pre-step hooks, and the
automatic compaction pass that runs there can take minutes with a slow summariser, so the prompt
shows at once, drawn as it will be once logged, with a dim line under it while a pass runs
(``WAITING_FOR_PASS``). Then what the model streams until its message is logged.

A turn that ends without logging its prompt (refused, failed or cancelled before its first step
began) takes the prompt off again: ``turn_ended`` says so, and the app puts the draft back in
the box, unsent (``dsh.tui.app_work``). A turn cancelled while the pass runs logs its prompt
(``dsh.agent.turn_close.log_unsent_prompt``): it stays in the transcript, where the turn's
stopped note follows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.segment import Segment

from dsh.agent.loggable import loggable_text
from dsh.events import AssistantMessageEvent, Event, UserMessageEvent, UserSource
from dsh.llm.types import (
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    TextWasReasoning,
    ToolCallDelta,
)
from dsh.tui.blocks import DIM, NOTE, Block, Row, block_rows
from dsh.tui.wrap import sanitize, wrap

if TYPE_CHECKING:
    from dsh.tui.transcript_view import TranscriptView

WAITING_FOR_PASS = "waiting: sent to the model once the compaction pass ends"

WaitingPrompt = tuple[str, bool]
"""A prompt sent but not logged yet, as shown (escapes made visible), and whether a compaction
pass runs ahead of it."""


def waiting_prompt_rows(waiting: WaitingPrompt, width: int) -> list[Row]:
    """The rows of a prompt not logged yet: those it will have once logged (a person's
    prompt's block), with ``WAITING_FOR_PASS`` under it while a pass runs ahead of it."""
    text, compacting = waiting
    rows = block_rows(Block("user", -1, cached_text=text), width, show_reasoning=False, details={})
    if compacting:
        room = max(width, 12) - 4
        lines = wrap(WAITING_FOR_PASS, room)
        rows[-1:-1] = [[Segment("  ⋯ ", DIM), Segment(line, NOTE)] for line in lines]
    return rows


def is_persons_prompt(event: Event) -> bool:
    """A prompt a person sent, as the loop logs it (not dsh's notes, not a checkpoint)."""
    return (
        isinstance(event, UserMessageEvent)
        and event.surface_op == "append"
        and isinstance(event.data.source, UserSource)
    )


class LiveTail:
    """The live tail of one app's transcript view."""

    def __init__(self, view: TranscriptView) -> None:
        self.view = view
        self.prompt: str | None = None
        """The running turn's prompt while it is not logged (None: logged, or no turn)."""
        self._compacting = False
        self._text = self._reasoning = ""
        self._calls: dict[int, str] = {}

    def prompt_sent(self, prompt: str, *, compacting: bool) -> None:
        """A turn starts on ``prompt``: show it until it is logged."""
        self.prompt, self._compacting = prompt, compacting
        self._show_prompt()

    def logged(self, event: Event, *, compacting: bool) -> None:
        """Follow one logged event: the prompt's own ends its wait, a reply ends the stream,
        a compaction pass starting or ending marks the waiting prompt or unmarks it."""
        if isinstance(event, AssistantMessageEvent):
            self.reset_stream()
        elif self.prompt is not None and is_persons_prompt(event):
            self.prompt = None
            self.view.set_waiting(None)
        elif self.prompt is not None and compacting != self._compacting:
            self._compacting = compacting
            self._show_prompt()

    def turn_ended(self) -> bool:
        """The turn ended: take its prompt off the tail; True if it was never logged."""
        unlogged, self.prompt = self.prompt is not None, None
        self.view.set_waiting(None)
        return unlogged

    def _show_prompt(self) -> None:
        if self.prompt is not None:
            self.view.set_waiting((sanitize(loggable_text(self.prompt)), self._compacting))

    def streamed(self, event: StreamEvent) -> None:
        """A piece of the model's reply, before it is logged."""
        if isinstance(event, TextDelta):
            self._text += event.text
        elif isinstance(event, ReasoningDelta):
            self._reasoning += event.text
        elif isinstance(event, TextWasReasoning):  # a lone </think>: the text so far was that
            self._reasoning, self._text = self._reasoning + self._text.lstrip(), ""
        elif isinstance(event, ToolCallDelta):
            if event.name or event.index not in self._calls:
                self._calls[event.index] = event.name or ""
        else:
            return
        calls = [self._calls[i] for i in sorted(self._calls)]
        self.view.set_live(self._text, self._reasoning, calls)

    def reset_stream(self) -> None:
        self._text, self._reasoning, self._calls = "", "", {}
        self.view.clear_live()
