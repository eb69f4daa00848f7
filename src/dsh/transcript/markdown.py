"""Markdown export of the human transcript (``dsh sessions export --format md``).

A conversation reads as people saw it: each message a section; each tool call a section of its
own with what it is about in its heading (a command, a path, a query: ``call_summary``, as the
terminal UI's cards say it) and its result under it — a shell command as an ``sh`` block, a file
edit as the ``diff`` it logged, a file ``write_file`` created as its content. A call whose
result never came (a turn cut off) still has its section, saying so; the calls a reply asked
for past ``tools.max_calls_per_reply`` are one line after the calls that ran
(``dsh.transcript.call_fold``). Compaction passes show as
one marker line each. The file opens with the session's title and what places it: its id, when
and in which workspace it started, the models that answered.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from dsh.events import Event, Message, ReasoningBlock, RequestHeaderEvent, ToolResultBlock
from dsh.store import SessionHeader
from dsh.transcript.call_fold import OverLimitItem, over_limit_text
from dsh.transcript.call_summary import call_summary
from dsh.transcript.projection import (
    MarkerItem,
    MessageItem,
    NoteItem,
    ToolCallItem,
    ToolResultItem,
    transcript_items,
)
from dsh.transcript.render import (
    COMPACTION_MARKER,
    context_title,
    cut_off_note,
    injected_by,
    not_run_note,
)
from dsh.transcript.titles import session_title

NO_RESULT = "*(no result logged: the turn ended before this call was answered)*"
_LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".sh": "sh",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".md": "markdown",
    ".rs": "rust",
    ".go": "go",
    ".html": "html",
    ".css": "css",
}


def _fence(text: str, language: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{language}\n{text}\n{ticks}"


def _code(text: str) -> str:
    """``text`` as inline code (longer backtick runs when it holds backticks)."""
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def message_markdown(message: Message) -> str:
    """One message's section (an assistant's tool calls are sections of their own)."""
    if message.role == "assistant":
        parts = ["### Assistant"]
        reasoning = "".join(b.text for b in message.content if isinstance(b, ReasoningBlock))
        if reasoning:
            parts.append("\n".join(f"> {line}" for line in f"*Reasoning:* {reasoning}".split("\n")))
        if message.text():
            parts.append(message.text())
        return "\n\n".join(parts)
    if message.role == "tool":
        results = [b for b in message.content if isinstance(b, ToolResultBlock)]
        body = "".join(inner.text for block in results for inner in block.content)
        title = "### Tool result"
        if any(block.is_error for block in results):
            title += " (error)"
        return f"{title}\n\n{_fence(body)}"
    plugin = injected_by(message)
    title = "User" if plugin is None else context_title(plugin)
    return f"### {title}\n\n{message.text()}"


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    arguments: str


def call_markdown(call: _Call, result: ToolResultItem | None) -> str:
    """A tool call's section: a heading saying what it is about, then its result."""
    args = _arguments(call.arguments)
    summary = call_summary(call.name, call.arguments)
    command = args.get("command") if call.name == "bash" else None
    heading = f"#### {_code(call.name)}"
    if isinstance(command, str) and command.strip():
        parts = [heading, _fence(command, "sh")]
    elif summary and "\n" not in summary:
        parts = [f"{heading} {_code(summary)}"]
    else:
        parts = [heading, _fence(call.arguments)]
    if result is None:
        parts.append(NO_RESULT)
        return "\n\n".join(parts)
    if result.is_error:
        parts.append("*(error)*")
    content = args.get("content")
    path = args.get("path")
    if result.diff:
        parts.extend([result.text, _fence("\n".join(result.diff), "diff")])
    elif call.name == "write_file" and not result.is_error and isinstance(content, str):
        language = _LANGUAGES.get(_suffix(path), "") if isinstance(path, str) else ""
        parts.extend([result.text, _fence(content.rstrip("\n"), language)])
    else:
        parts.append(_fence(result.text.rstrip("\n")))
    return "\n\n".join(parts)


def render_markdown(header: SessionHeader, events: Sequence[Event]) -> str:
    """The conversation as people saw it, one section per message and per tool call, markers
    included, under a heading that says what the session is (:func:`front_matter`)."""
    return "".join(markdown_pieces(header, events))


def markdown_pieces(header: SessionHeader, events: Sequence[Event]) -> Iterator[str]:
    """:func:`render_markdown` in pieces, a section (and the blank line after it) at a time, so
    an export can write each as it is made: every piece ends with a newline, where no escape
    sequence, CR LF or flag can be cut (``printable_text`` of each piece is that of the whole's
    part)."""
    sections = _sections(header, events)
    previous = next(sections)  # the front matter's heading: never none
    for section in sections:
        yield previous + "\n\n"
        previous = section
    yield previous + "\n"


def _sections(header: SessionHeader, events: Sequence[Event]) -> Iterator[str]:
    yield from front_matter(header, events)
    waiting: dict[int, _Call] = {}  # a call's card seq: the call, until its result comes
    unlogged: dict[str, _Call] = {}  # the last reply's calls no tool/call event opened yet
    folds: list[str] = []  # the calls a reply's limit kept from running: after those that ran

    def unanswered() -> list[str]:
        sections = [call_markdown(call, None) for call in [*waiting.values(), *unlogged.values()]]
        waiting.clear()
        unlogged.clear()
        sections += folds
        folds.clear()
        return sections

    for item in transcript_items(events):
        if isinstance(item, ToolCallItem):
            unlogged.pop(item.call_id, None)
            waiting[item.seq] = _Call(item.name, item.arguments)
            continue
        if isinstance(item, ToolResultItem):
            call = waiting.pop(item.card_seq, None) if item.card_seq is not None else None
            if call is None:
                title = "### Tool result (error)" if item.is_error else "### Tool result"
                yield f"{title}\n\n{_fence(item.text)}"
            else:
                yield call_markdown(call, item)
            if not waiting and folds:
                yield from folds
                folds.clear()
            continue
        if isinstance(item, OverLimitItem):
            for unrun in item.calls:
                unlogged.pop(unrun.call_id, None)
            folds.append(f"*{over_limit_text(item)}*")
            continue
        yield from unanswered()
        if isinstance(item, MarkerItem):
            yield f"> {COMPACTION_MARKER}"
        elif isinstance(item, MessageItem):
            yield message_markdown(item.message)
            if item.cut_by is not None:
                yield f"*{cut_off_note(item.cut_by)}*"
            if item.not_run:
                yield f"*{not_run_note(item.not_run)}*"
            unlogged.update((c.id, _Call(c.name, c.arguments)) for c in item.message.tool_calls())
        elif isinstance(item, NoteItem):
            yield f"*{item.text}*"
    yield from unanswered()


def front_matter(header: SessionHeader, events: Sequence[Event]) -> list[str]:
    """The export's heading (the session's title, as every face shows it) and what a reader of
    a file needs to place it: its id, when and where it started, the models that answered."""
    title = session_title(events) or f"dsh session {header.id}"
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(header.created_at / 1000))
    lines = [f"- Session {_code(header.id)}, started {started} in {_code(header.cwd)}"]
    models = list(
        dict.fromkeys(
            f"{e.data.header.config.provider}/{e.data.header.config.model}"
            for e in events
            if isinstance(e, RequestHeaderEvent)
        )
    )
    if models:
        label = "Model" if len(models) == 1 else "Models"
        lines.append(f"- {label}: {', '.join(_code(model) for model in models)}")
    return [f"# {title}", "\n".join(lines)]


def _arguments(text: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[name.rfind(".") :].lower() if "." in name else ""
