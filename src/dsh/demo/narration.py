"""What ``dsh demo`` prints while the session runs: each prompt, the assistant's words, each tool
call with a preview of its result, the compaction pass as it progresses (``compacting · k of N
regions``) and its marker, and the recall calls that get a compacted detail back. Everything
comes from the logged events alone, one line per thing."""

from __future__ import annotations

from collections.abc import Callable

from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    Event,
    OpenCalls,
    TextBlock,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultEvent,
    UserMessageEvent,
    UserSource,
    is_append_surface_event,
)
from dsh.recall import RECALL_TOOL_NAMES
from dsh.transcript import COMPACTION_MARKER
from dsh.transcript.progress import CompactionProgress

PREVIEW_CHARS = 72


class Narrator:
    """Feeds on logged events and writes the demo's progress lines to ``write``."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._progress = CompactionProgress()
        self._open_calls: OpenCalls[bool] = OpenCalls()
        """Whether each call without a result yet is a recall call, by call id."""

    def __call__(self, event: Event) -> None:
        if is_append_surface_event(event):
            self._surface(event)
        elif isinstance(event, ToolCallEvent):
            recall = event.data.name in RECALL_TOOL_NAMES
            self._open_calls.open(event.data.call_id, recall)
            mark = "⤷ recall:" if recall else "→"
            self._write(f"  {mark} {event.data.name}({_preview(event.data.arguments)})")
        was_running = self._progress.running
        if self._progress.feed(event) and self._progress.text is not None:
            self._write(f"  ⋯ {self._progress.text}")
        landed = isinstance(event, CompactionEndEvent) and event.data.error is None
        if landed and was_running and not self._progress.running:
            self._write(f"  {COMPACTION_MARKER} (the originals stay recallable)")

    def _surface(self, event: UserMessageEvent | AssistantMessageEvent | ToolResultEvent) -> None:
        if isinstance(event, UserMessageEvent):
            if isinstance(event.data.source, UserSource):
                self._write(f"▸ {_preview(event.data.text())}")
        elif isinstance(event, AssistantMessageEvent):
            text = event.data.message.text().strip()
            if text:
                self._write(f"  {text}")
        else:
            for block in event.data.message.content:
                if isinstance(block, ToolResultBlock):
                    mark = "✗" if block.is_error else "✓"
                    recall = self._open_calls.answer(block.tool_call_id) is True
                    preview = recall_preview(block) if recall else result_preview(block)
                    self._write(f"    {mark} {preview}")


def recall_preview(block: ToolResultBlock) -> str:
    """A recall result: its search hits (``[c66 #msg 3] …``), else its first line."""
    lines = _lines(block)
    hits = [line for line in lines if line.startswith("[c")]
    shown = hits[:1] or lines[:1] or ["(no output)"]
    return " ".join(shown)


def _lines(block: ToolResultBlock) -> list[str]:
    text = "".join(b.text for b in block.content if isinstance(b, TextBlock))
    return [line.strip() for line in text.splitlines() if line.strip()]


def result_preview(block: ToolResultBlock) -> str:
    """First and last line of a tool result (where a traceback says what went wrong); a
    trailing note such as ``[exit code 1]`` joins the last line."""
    lines = _lines(block)
    while len(lines) > 1 and lines[-1].startswith("[") and lines[-1].endswith("]"):
        note = lines.pop()
        lines[-1] = f"{lines[-1]} {note}"
    if not lines:
        return "(no output)"
    if len(lines) == 1:
        return _preview(lines[0])
    return f"{_preview(lines[0], 30)} … {lines[-1]} ({len(lines)} lines)"


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
