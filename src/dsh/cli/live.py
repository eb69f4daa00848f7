"""Plain-text live output for ``dsh run``.

On a terminal, answer text streams to stdout as it arrives and tool activity goes to stderr; when
stdout is a pipe or file, only each turn's final answer is printed, so scripts get clean output.
When stderr is a terminal, a model call that has produced nothing for a second shows a
"waiting for the model (N s)" line there, rewritten in place and erased once the reply starts.
"""

from __future__ import annotations

import sys

import click

from dsh.events import CompactionPlanEvent, Event, ToolCallEvent, ToolResultEvent
from dsh.llm.types import StreamEvent, TextDelta

PREVIEW_CHARS = 100


class LiveDisplay:
    def __init__(self, *, streaming: bool, notices: bool = False) -> None:
        self.streaming = streaming
        self.notices = notices
        """Show the waiting notice on stderr (a terminal: it is rewritten in place)."""
        self._mid_line = False
        self._notice: str | None = None

    @classmethod
    def for_terminal(cls) -> LiveDisplay:
        return cls(streaming=sys.stdout.isatty(), notices=sys.stderr.isatty())

    def show_waiting(self, notice: str | None) -> None:
        """Show ``notice`` in place of the previous one (None erases it)."""
        if not self.notices or notice == self._notice:
            return
        self._notice = notice
        click.echo("\r\x1b[K" + (notice or ""), nl=False, err=True, color=True)

    def on_stream(self, event: StreamEvent) -> None:
        self.show_waiting(None)
        if self.streaming and isinstance(event, TextDelta) and event.text:
            click.echo(event.text, nl=False)
            self._mid_line = not event.text.endswith("\n")

    def on_event(self, event: Event) -> None:
        self.show_waiting(None)
        if not self.streaming:
            return
        if isinstance(event, ToolCallEvent):
            self._break_line()
            click.echo(f"  → {event.data.name}({_preview(event.data.arguments)})", err=True)
        elif isinstance(event, CompactionPlanEvent):
            self._break_line()
            regions = len(event.data.regions)
            click.echo(f"  ⋯ compacting earlier context ({regions} checkpoint(s))", err=True)
        elif isinstance(event, ToolResultEvent) and event.surface_op == "append":
            block = event.data.message.content[0]
            text = "".join(getattr(b, "text", "") for b in getattr(block, "content", ()))
            mark = "✗" if getattr(block, "is_error", False) else "✓"
            click.echo(f"    {mark} {_preview(text)}", err=True)

    def finish_turn(self, final_text: str) -> None:
        if self.streaming:
            self._break_line()
        else:
            click.echo(final_text)

    def _break_line(self) -> None:
        if self._mid_line:
            click.echo()
            self._mid_line = False


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"
