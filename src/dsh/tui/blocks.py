"""The transcript as blocks, and each block as rows of styled text for a given width.

A block is what one transcript item (or a local note) shows: a prompt, an assistant message, a
tool card (the call and, once it arrives, its result), the marker of a compaction pass. Items
come from ``dsh.transcript.TranscriptProjector`` only, so a session watched live and the same
log opened cold give the same blocks, and the same rows.

Rows are pure functions of (block, width, show_reasoning, pass details): no widget state, no
time, which keeps rendering testable without a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from rich.segment import Segment
from rich.style import Style

from dsh.events import Message, ReasoningBlock, UserSource
from dsh.tools.diffs import DIFF_TOOLS
from dsh.transcript import (
    COMPACTION_MARKER,
    MarkerItem,
    NoteItem,
    OverLimitItem,
    PassDetails,
    ToolCallItem,
    ToolResultItem,
    TranscriptItem,
    cut_off_note,
    not_run_note,
)
from dsh.transcript.call_summary import call_summary, todo_lines
from dsh.tui.diffs import (
    FileDiff,
    call_diff,
    line_style,
    logged_diff,
    parse_arguments,
)
from dsh.tui.markdown_syntax import looks_like_markdown
from dsh.tui.output_rows import tail_rows
from dsh.tui.unrun_card import unrun_rows, unrun_text
from dsh.tui.wrap import one_line, sanitize, wrap

BlockKind = Literal["user", "assistant", "context", "tool", "result", "marker", "note", "unrun"]
Row = list[Segment]

USER = Style(bold=True)
USER_MARK = Style(bold=True, color="cyan")
ASSISTANT_MARK = Style(color="magenta")
REASONING = Style(dim=True, italic=True)
DIM = Style(dim=True)
TOOL_NAME = Style(bold=True, color="yellow")
RESULT_OK = Style(color="green")
RESULT_ERROR = Style(color="red")
NOTE = Style(dim=True, italic=True)
TYPING = Style(dim=True, italic=True)

EXPANDABLE: frozenset[BlockKind] = frozenset({"tool", "result", "marker", "context", "unrun"})


def compacted_line(details: PassDetails) -> str:
    """The marker's detail line (the same words as ``/compact``'s answer)."""
    return f"Compacted {details.items} history items (~{details.tokens} tokens)"


@dataclass(eq=False, slots=True)
class Block:
    kind: BlockKind
    seq: int
    """The log seq of the item (-1 for a local note)."""
    message: Message | None = None
    """The message a user / assistant / context block shows (its text is read lazily: a
    session opens without touching the text of blocks that are never drawn)."""
    label: str = ""
    """Tool name, or who injected a context message."""
    arguments: str = ""
    call_id: str = ""
    result: ToolResultItem | None = None
    pass_id: str = ""
    expanded: bool = False
    cut_by: str | None = None
    """The error code of the provider failure that cut an assistant message short."""
    not_run: tuple[str, ...] = ()
    """The tool calls an assistant message wrote in its text that were not run (a dim note)."""
    cached_text: str | None = None
    cached_reasoning: str | None = None
    status: str | None = None
    """What a live card without its result says under it (``dsh.tui.running_cards``; None:
    ``running…``)."""
    tail: tuple[str, ...] = ()
    """The last lines its command printed while it runs, shown under that (never logged)."""
    unrun: OverLimitItem | None = None
    """The calls of a reply that ``tools.max_calls_per_reply`` kept from running (an
    ``unrun`` card: ``dsh.tui.unrun_card``)."""
    hidden: bool = False
    """A local note taken off the screen (a ``!cmd``'s output once the prompt that carries it
    is sent: that prompt shows it): it has no rows."""

    @property
    def expandable(self) -> bool:
        return self.kind in EXPANDABLE

    @property
    def text(self) -> str:
        if self.cached_text is None:
            message = self.message
            self.cached_text = sanitize(message.text()) if message is not None else ""
        return self.cached_text

    @property
    def reasoning(self) -> str:
        if self.cached_reasoning is None:
            parts = self.message.content if self.message is not None else ()
            reasoning = "\n".join(b.text for b in parts if isinstance(b, ReasoningBlock))
            self.cached_reasoning = sanitize(reasoning)
        return self.cached_reasoning


def block_for(item: TranscriptItem) -> Block | None:
    """A new block for ``item`` (None for items that only update another block)."""
    if isinstance(item, MarkerItem):
        return Block("marker", item.seq, pass_id=item.pass_id)
    if isinstance(item, ToolCallItem):
        return Block(  # a tool's name is the model's text too: no escapes reach a terminal
            "tool",
            item.seq,
            label=sanitize(item.name),
            arguments=item.arguments,
            call_id=item.call_id,
        )
    if isinstance(item, ToolResultItem):
        return Block("result", item.seq, label="tool result", call_id=item.call_id, result=item)
    if isinstance(item, NoteItem):
        return Block("note", item.seq, cached_text=sanitize(item.text), cached_reasoning="")
    if isinstance(item, OverLimitItem):  # its text: what a find looks in
        return Block(
            "unrun", item.seq, unrun=item, cached_text=unrun_text(item), cached_reasoning=""
        )
    message = item.message
    if message.role == "assistant":
        return Block(
            "assistant", item.seq, message=message, cut_by=item.cut_by, not_run=item.not_run
        )
    if isinstance(message.source, UserSource):
        return Block("user", item.seq, message=message)
    plugin = sanitize(getattr(message.source, "plugin", ""))  # a log from elsewhere names it
    return Block("context", item.seq, message=message, label=plugin)


class TranscriptModel:
    """The ordered blocks of one transcript; a tool result joins the card the projector paired
    it with (``ToolResultItem.card_seq``: ids repeat across replies, seqs do not)."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self._cards: dict[int, int] = {}
        """The block index of each tool card, by the seq of its call."""
        self._markers: dict[str, int] = {}

    def clear(self) -> None:
        self.blocks.clear()
        self._cards.clear()
        self._markers.clear()

    def add(self, items: Iterable[TranscriptItem]) -> set[int]:
        """Append the blocks of ``items``; returns indices of EARLIER blocks that changed."""
        changed: set[int] = set()
        for item in items:
            if isinstance(item, ToolResultItem) and item.card_seq is not None:
                index = self._cards.get(item.card_seq)
                if index is not None and self.blocks[index].result is None:
                    self.blocks[index].result = item
                    changed.add(index)
                    continue
            block = block_for(item)
            if block is None:
                continue
            if block.kind == "tool":
                self._cards[block.seq] = len(self.blocks)
            elif block.kind == "marker":
                self._markers[block.pass_id] = len(self.blocks)
            self.blocks.append(block)
        return {i for i in changed if i < len(self.blocks)}

    def add_note(self, text: str) -> Block:
        block = Block("note", -1, cached_text=sanitize(text), cached_reasoning="")
        self.blocks.append(block)
        return block

    def index_of(self, block: Block) -> int | None:
        """Where ``block`` is (None: not in this transcript, which was loaded again since);
        looked for from the end, where notes are added."""
        for index in range(len(self.blocks) - 1, -1, -1):
            if self.blocks[index] is block:
                return index
        return None

    def marker_indices(self) -> list[int]:
        return list(self._markers.values())


# ---- rows ------------------------------------------------------------------------------------


def _prefixed(
    lines: list[str], first: Segment, rest: Segment, style: Style | None = None
) -> list[Row]:
    rows: list[Row] = []
    for i, line in enumerate(lines):
        rows.append([first if i == 0 else rest, Segment(line, style)])
    return rows


def _indented(text: str, width: int, indent: int, style: Style | None = None) -> list[Row]:
    pad = Segment(" " * indent)
    return [[pad, Segment(line, style)] for line in wrap(text, width - indent)]


def _pretty_arguments(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return sanitize(arguments)
    return sanitize(json.dumps(value, indent=2, ensure_ascii=False))


def _result_text(result: ToolResultItem) -> str:
    return sanitize(result.text)


def card_text(block: Block) -> str:
    """Everything a tool card can show once expanded: its name, arguments and result."""
    result = _result_text(block.result) if block.result is not None else ""
    return f"{block.label}\n{_pretty_arguments(block.arguments)}\n{result}"


def _card_diff(block: Block) -> FileDiff | None:
    """An edit_file / write_file card's diff: the one its result logged, else from its
    arguments (the file has moved on); none for a call that failed: it changed nothing."""
    if block.kind != "tool" or block.label not in DIFF_TOOLS:
        return None
    if block.result is not None and block.result.is_error:
        return None
    args = parse_arguments(block.arguments)
    logged = block.result.diff if block.result is not None else None
    if logged is not None:
        path = args.get("path") if args is not None else None
        return logged_diff(path if isinstance(path, str) else "?", logged)
    return call_diff(block.label, args) if args is not None else None


def _todos(block: Block) -> list[str] | None:
    lines = todo_lines(block.arguments) if block.label == "todo_write" else None
    return None if lines is None else [sanitize(line) for line in lines]


def _card_rows(block: Block, width: int) -> list[Row]:
    result = block.result
    mark = "▾ " if block.expanded else "▸ "
    head: Row = [Segment("  "), Segment(mark, DIM), Segment(block.label, TOOL_NAME)]
    diff = _card_diff(block)
    if block.kind == "tool" and not block.expanded:
        room = width - 4 - len(block.label) - 2
        summary = (
            diff.summary
            if diff is not None
            else sanitize(call_summary(block.label, block.arguments))
        )
        if room > 1:
            head += [Segment("  "), Segment(one_line(summary, room), DIM)]
    rows = [head]
    if block.expanded:
        if diff is not None:
            rows.append([Segment("    "), Segment("diff", DIM)])
            for i, line in enumerate(diff.lines):
                rows += _indented(line, width, 6, line_style(line, header=i < diff.headers))
        elif block.kind == "tool" and (todos := _todos(block)) is not None:
            rows.append([Segment("    "), Segment("todos", DIM)])
            for line in todos:
                rows += _indented(line, width, 6)
        elif block.kind == "tool":
            rows.append([Segment("    "), Segment("arguments", DIM)])
            rows += _indented(_pretty_arguments(block.arguments), width, 6)
        if result is not None:
            title = "result (error)" if result.is_error else "result"
            rows.append([Segment("    "), Segment(title, RESULT_ERROR if result.is_error else DIM)])
            rows += _indented(_result_text(result), width, 6)
        elif block.kind == "tool":
            waiting = f"no result yet · {block.status}" if block.status else "no result yet"
            rows.append([Segment("    "), Segment(waiting, DIM)])
            rows += tail_rows(block.tail, width)
        return rows
    if result is None:
        rows.append([Segment("    └ ", DIM), Segment(block.status or "running…", DIM)])
        return rows + tail_rows(block.tail, width)
    text = _result_text(result)
    lines = text.strip().count("\n") + 1 if text.strip() else 0
    more = f" (+{lines - 1} lines)" if lines > 1 else ""
    style = RESULT_ERROR if result.is_error else RESULT_OK
    room = max(1, width - 6 - len(more))
    first_line = text.strip().partition("\n")[0]
    head_text = one_line(first_line, room) if text.strip() else "(no output)"
    rows.append([Segment("    └ ", style), Segment(head_text), Segment(more, DIM)])
    return rows


def _marker_rows(block: Block, width: int, details: Mapping[str, PassDetails]) -> list[Row]:
    rows: list[Row] = [[Segment("  "), Segment(one_line(COMPACTION_MARKER, width - 2), DIM)]]
    if not block.expanded:
        return rows
    info = details.get(block.pass_id)
    if info is None:
        return [*rows, [Segment("    "), Segment("no details were logged for this pass", DIM)]]
    rows += _indented(compacted_line(info), width, 4, DIM)
    for kind, summary in info.summaries:
        rows.append([Segment("    "), Segment(f"{kind} summary", DIM)])
        rows += _indented(sanitize(summary), width, 6, DIM)
    return rows


def _reasoning_rows(reasoning: str, width: int) -> list[Row]:
    bar = Segment("  ┊ ", DIM)
    return _prefixed(wrap(reasoning, width - 4), bar, bar, REASONING)


def markdown_rows(text: str, width: int) -> list[Row]:
    """``dsh.tui.markdown.markdown_rows``, imported on first use (Rich's Markdown, its parser
    and Pygments: a new session's first frame has no reply to draw with them)."""
    from dsh.tui.markdown import markdown_rows as rows

    return rows(text, width)


def _message_rows(block: Block, width: int, show_reasoning: bool) -> list[Row]:
    rows: list[Row] = []
    if block.kind == "user":
        mark = Segment("❯ ", USER_MARK)
        return _prefixed(wrap(block.text, width - 2), mark, Segment("  "), USER)
    if show_reasoning and block.reasoning:
        rows += _prefixed(
            wrap(block.reasoning, width - 4), Segment("  ┊ ", DIM), Segment("  ┊ ", DIM), REASONING
        )
    if block.text and looks_like_markdown(block.text):
        for i, line in enumerate(markdown_rows(block.text, width - 2)):
            rows.append([Segment("● ", ASSISTANT_MARK) if i == 0 else Segment("  "), *line])
    elif block.text:
        rows += _prefixed(wrap(block.text, width - 2), Segment("● ", ASSISTANT_MARK), Segment("  "))
    if block.cut_by is not None:
        rows += _indented(sanitize(cut_off_note(block.cut_by)), width, 2, DIM)
    if block.not_run:
        rows += _indented(sanitize(not_run_note(block.not_run)), width, 2, DIM)
    return rows


def _context_rows(block: Block, width: int) -> list[Row]:
    mark = "▾ " if block.expanded else "▸ "
    title = f"context from {block.label}" if block.label else "context"
    head: Row = [Segment("  "), Segment(mark, DIM), Segment(title, DIM)]
    if not block.expanded:
        room = width - 4 - len(title) - 2
        if room > 1:
            head += [Segment("  "), Segment(one_line(block.text, room), DIM)]
        return [head]
    return [head, *_indented(block.text, width, 4, DIM)]


def block_rows(
    block: Block, width: int, *, show_reasoning: bool, details: Mapping[str, PassDetails]
) -> list[Row]:
    """The rows of one block at ``width`` cells, with the blank row that follows it (a block
    that shows nothing, such as an assistant message with only tool calls, has no rows)."""
    width = max(width, 12)
    if block.hidden:
        return []
    if block.kind in ("user", "assistant"):
        rows = _message_rows(block, width, show_reasoning)
    elif block.kind in ("tool", "result"):
        rows = _card_rows(block, width)
    elif block.kind == "marker":
        rows = _marker_rows(block, width, details)
    elif block.kind == "context":
        rows = _context_rows(block, width)
    elif block.unrun is not None:
        rows = unrun_rows(block.unrun, width, expanded=block.expanded)
    else:
        rows = _indented(block.text, width, 2, NOTE)
    if rows:
        rows.append([])
    return rows


UNREAD_MESSAGE_ROWS = 4
"""The height guess for a message whose text was not read yet."""


def estimated_height(block: Block, width: int, *, show_reasoning: bool) -> int:
    """A cheap guess of ``len(block_rows(...))``; exact for collapsed cards and markers, -1
    when there is no cheap guess (measure the block instead)."""
    if block.kind in ("user", "assistant"):
        if block.cached_text is None:
            return UNREAD_MESSAGE_ROWS
        room = max(1, width - 2)
        text = block.text
        guess = (text.count("\n") + 1 + len(text) // room) if text else 0
        if show_reasoning and block.reasoning:
            guess += block.reasoning.count("\n") + 1 + len(block.reasoning) // room
        return guess + 1 if guess else 0
    if block.expanded or block.kind in ("note", "unrun"):
        return -1
    if block.kind in ("tool", "result"):
        return 3
    return 2


def live_rows(
    text: str, reasoning: str, calls: list[str], width: int, *, show_reasoning: bool
) -> list[Row]:
    """The "assistant is typing" block: what the model has streamed so far."""
    width = max(width, 12)
    rows: list[Row] = []
    if show_reasoning and reasoning:
        rows += _prefixed(
            wrap(sanitize(reasoning), width - 4),
            Segment("  ┊ ", DIM),
            Segment("  ┊ ", DIM),
            REASONING,
        )
    if text:
        lines = wrap(sanitize(text) + "▍", width - 2)
        rows += _prefixed(lines, Segment("● ", ASSISTANT_MARK), Segment("  "))
    for name in calls:
        rows.append(
            [
                Segment("  "),
                Segment("▸ ", DIM),
                Segment(sanitize(name) or "tool", TOOL_NAME),
                Segment("  …", DIM),
            ]
        )
    if not rows:
        rows.append([Segment("● ", ASSISTANT_MARK), Segment("assistant is typing…", TYPING)])
    rows.append([])
    return rows


def row_text(row: Row) -> str:
    return "".join(segment.text for segment in row)


def plain_lines(
    blocks: Iterable[Block], width: int, show_reasoning: bool, details: Mapping[str, PassDetails]
) -> list[str]:
    """The rows of ``blocks`` as plain text."""
    out: list[str] = []
    for block in blocks:
        rows = block_rows(block, width, show_reasoning=show_reasoning, details=details)
        out += [row_text(row).rstrip() for row in rows]
    return out
