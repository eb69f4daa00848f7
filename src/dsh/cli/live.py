"""Plain-text live output for ``dsh run``.

On a terminal, answer text streams to stdout as it arrives and tool activity goes to stderr; when
stdout is a pipe or file, only each turn's final answer is printed, so scripts get clean output.
When stderr is a terminal, a model call that has produced nothing for a second shows a
"waiting for the model (N s)" line there, rewritten in place and erased once the reply starts.
A compaction pass is announced when it starts; with stderr on a terminal its line counts the
summary calls done so far, in place. A tool call the approval policy denied is told on stderr
in full (with how to allow it) whether or not stdout is a terminal. The calls of a reply that
``tools.max_calls_per_reply`` kept from running are one line, not a line and a result each.

What the model wrote and what its tools read are text, never for a terminal to act on: the
answer, streamed or not, is printed as ``dsh.tools.terminal_text.printable_text`` makes it (no
escape sequence, other control characters as their escapes; a sequence cut between streamed
pieces is dropped whole), and a tool call's and result's previews as ``printable_line`` does.

Text that may yet prove to be reasoning (a lone ``</think>`` may close it) is printed by the
rule ``dsh.cli.held_text`` states: held back for a model known to write one; printed at once
otherwise, and if it proves to be reasoning, a line on stderr says the text above was that.
"""

from __future__ import annotations

import sys

import click

from dsh.cli.held_text import HeldText
from dsh.errors import printable_line
from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionStartEvent,
    Event,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultEvent,
)
from dsh.llm.types import StreamEvent
from dsh.store.live_file import CALL_ENDS
from dsh.tools.approval import for_a_person
from dsh.tools.terminal_text import PrintableStream, printable_text
from dsh.transcript.call_fold import CallFold, over_limit_text

PREVIEW_CHARS = 100
WAS_REASONING = (
    "  (the text above was the model's reasoning: it ended with a lone </think>; from now on "
    "this model's reasoning is held back)"
)


class LiveDisplay:
    def __init__(self, *, streaming: bool, notices: bool = False) -> None:
        self.streaming = streaming
        self.notices = notices
        """Show the waiting notice on stderr (a terminal: it is rewritten in place)."""
        self._mid_line = False
        self._notice: str | None = None
        self._pass: str | None = None
        """The compaction pass whose line is showing (None: no pass running)."""
        self._calls = 0
        self._text = PrintableStream()
        """The streamed reply, made printable (an escape cut between pieces held back)."""
        self._fold = CallFold()
        """The latest reply's calls past ``tools.max_calls_per_reply``: one line for all."""
        self.held = HeldText()
        """Text that may be reasoning, held back (``dsh.cli.held_text``; ``dsh run`` gives it
        the endpoint's memory)."""

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
        shown = self.held.feed(event)  # fed even to a pipe: a lone </think> is remembered
        if not self.streaming:
            return
        if shown.text:
            self._write(self._text.feed(shown.text))
        if shown.retracted:
            self._break_line()
            click.echo(WAS_REASONING, err=True)

    def _write(self, shown: str) -> None:
        """Streamed answer text, already printable."""
        if shown:
            click.echo(shown, nl=False)
            self._mid_line = not shown.endswith("\n")

    def on_event(self, event: Event) -> None:
        self.show_waiting(None)
        if isinstance(event, CALL_ENDS):  # the reply's end (one cut short too): its text
            held = self.held.release()
            if self.streaming:
                self._write(self._text.feed(held))
        if self._folded(event):
            return
        if isinstance(event, ToolResultEvent) and self._told_denial(event):
            return
        if not self.streaming:
            return
        if isinstance(event, ToolCallEvent):
            self._break_line()
            click.echo(f"  → {event.data.name}({_preview(event.data.arguments)})", err=True)
        elif isinstance(event, CompactionStartEvent):
            self._pass_started(event.data.pass_id or event.data.compaction_id)
        elif isinstance(event, CompactionPlanEvent):
            self._pass_line(f"({len(event.data.regions)} checkpoint(s))", done=True)
        elif isinstance(event, CompactionEndEvent) and event.data.error is not None:
            if self._pass is not None:
                self._pass_line(f"stopped: {printable_line(event.data.error)}", done=True)
        elif isinstance(event, ToolResultEvent) and event.surface_op == "append":
            block = event.data.message.content[0]
            mark = "✗" if getattr(block, "is_error", False) else "✓"
            click.echo(f"    {mark} {_preview(_result_text(event))}", err=True)

    def _folded(self, event: Event) -> bool:
        """Whether ``event`` is a call past ``tools.max_calls_per_reply`` or its result, which
        show as one line for the reply, at its first call (``dsh.transcript.call_fold``)."""
        if isinstance(event, AssistantMessageEvent):
            if event.surface_op == "append":
                self._fold.reply(event.data.message.tool_calls())
            return False
        if isinstance(event, ToolCallEvent):
            folded, fold = self._fold.call(event.seq, event.data)
            if fold is not None and self.streaming:
                self._break_line()
                click.echo(f"  ⋯ {printable_line(over_limit_text(fold))}", err=True)
            return folded
        if isinstance(event, ToolResultEvent) and event.surface_op == "append":
            block = event.data.message.content[0]
            return isinstance(block, ToolResultBlock) and self._fold.result(block.tool_call_id)
        return False

    def summary_call_done(self) -> None:
        """One summary call of the running pass finished (the count shows on a terminal)."""
        if self._pass is None:
            return
        self._calls += 1
        if self.streaming and self.notices:
            self._pass_line(f"({self._calls} call(s) done)")

    def _pass_started(self, pass_id: str) -> None:
        if pass_id == self._pass:
            return
        self._break_line()
        self._pass, self._calls = pass_id, 0
        if self.notices:
            self._pass_line("(0 call(s) done)")
        else:
            click.echo("  ⋯ compacting earlier context", err=True)

    def _pass_line(self, detail: str, *, done: bool = False) -> None:
        """The pass's line: rewritten in place on a terminal, one line per state otherwise."""
        text = f"  ⋯ compacting earlier context {detail}"
        if self.notices:
            click.echo("\r\x1b[K" + text, nl=done, err=True, color=True)
        elif done:
            click.echo(text, err=True)
        if done:
            self._pass = None

    def _told_denial(self, event: ToolResultEvent) -> bool:
        """Tell a denied call in full on stderr (its text says how to allow it)."""
        error = event.data.error
        if event.surface_op != "append" or error is None or error.code != "DENIED":
            return False
        self._break_line()
        prefix = "    ✗ " if self.streaming else "dsh: "
        click.echo(prefix + printable_text(for_a_person(_result_text(event))), err=True)
        return True

    def finish_turn(self, final_text: str) -> None:
        if self.streaming:
            self._break_line()
        elif final_text:  # a turn that failed before any answer prints no empty line
            click.echo(printable_text(final_text))

    def _break_line(self) -> None:
        self._write(self._text.finish())  # what the stream held back, as the reply ends
        if self._mid_line:
            click.echo()
            self._mid_line = False
        if self._pass is not None and self.notices:
            click.echo(err=True)  # leave the pass's in-place line as it stands
            self._pass = None


def _result_text(event: ToolResultEvent) -> str:
    block = event.data.message.content[0]
    return "".join(getattr(b, "text", "") for b in getattr(block, "content", ()))


def _preview(text: str) -> str:
    flat = printable_line(text)
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"
