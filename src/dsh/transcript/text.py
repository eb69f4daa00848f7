"""The human transcript as plain text (``dsh sessions show --view transcript``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from dsh.events import (
    AssistantMessageEvent,
    CommandDoneEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    Event,
    Message,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
    is_checkpoint_event,
    surface_message,
)
from dsh.transcript.call_fold import CallFold, OverLimitItem, over_limit_text
from dsh.transcript.projection import (
    MarkerItem,
    MessageItem,
    NoteItem,
    PassMarks,
    ToolResultItem,
    TranscriptItem,
    turn_end_note,
)
from dsh.transcript.render import (
    COMPACTION_MARKER,
    context_title,
    cut_off_note,
    injected_by,
    not_run_note,
    render_message,
    tool_result_line,
)

TRANSCRIPT_SEPARATOR = "\n\n"
"""Between two blocks of the transcript: a blank line."""


def render_item(item: TranscriptItem) -> str | None:
    """One item as text; tool calls are already lines of their assistant message."""
    if isinstance(item, MarkerItem):
        return COMPACTION_MARKER
    if isinstance(item, MessageItem):
        return _message_text(item.message, item.cut_by, item.not_run)
    if isinstance(item, ToolResultItem):
        return tool_result_line(item.text, is_error=item.is_error)
    if isinstance(item, NoteItem):
        return _note_text(item.text)
    if isinstance(item, OverLimitItem):
        return _note_text(over_limit_text(item))
    return None


def _message_text(message: Message, cut_by: str | None, not_run: tuple[str, ...] = ()) -> str:
    text = human_message_text(message)
    if cut_by is not None:
        text = f"{text}\n{cut_off_note(cut_by)}"
    return f"{text}\n{_note_text(not_run_note(not_run))}" if not_run else text


def human_message_text(message: Message) -> str:
    """``message`` as people read it: ``render_message``'s text, except that a note dsh gave
    the model as a user turn is ``Context from <plugin>: …``, not ``User: …`` (the model still
    reads ``User: …``: ``render_message`` is unchanged for it)."""
    plugin = injected_by(message)
    if plugin is None:
        return render_message(message)
    return f"{context_title(plugin)}: {message.text()}"


def _note_text(text: str) -> str:
    return f"({text})"


_TEXT_EVENTS = frozenset(
    {
        AssistantMessageEvent,
        ToolResultEvent,
        ToolCallEvent,
        UserMessageEvent,
        TurnEndEvent,
        CommandDoneEvent,
        CompactionStartEvent,
        CompactionEndEvent,
    }
)
"""The event classes that add to the text, or to what it needs to know (event classes are
leaves: the exact type is the class)."""


def transcript_blocks(events: Iterable[Event]) -> list[str]:
    """The blocks of the transcript people see of ``events``: :func:`iter_transcript_blocks`
    as a list."""
    return list(iter_transcript_blocks(events))


def iter_transcript_blocks(events: Iterable[Event]) -> Iterator[str]:
    """The blocks of the transcript people see of ``events`` (a log, in order): exactly
    ``render_item`` of each item ``TranscriptProjector`` gives (tests/transcript/test_text.py
    holds the two equal over random logs), in one pass that builds no items.

    A long log's ``show`` renders tens of thousands of blocks, so this pass skips what text
    leaves out: the items' objects, the tool-call cards (lines of their assistant message
    already) and the passes' summary details. It applies the projector's rules through the
    same helpers: ``surface_message``, ``PassMarks`` (markers, and the notes of passes that did
    not finish), ``CallFold`` (a reply's calls past ``tools.max_calls_per_reply`` as one
    block), ``turn_end_note`` and the renderers.
    It dispatches on the exact type, as the projector does (event classes are leaves). A
    generator: ``dsh sessions show`` writes each block as it comes, never holding them all."""
    passes = PassMarks()
    fold = CallFold()
    for event in events:
        if type(event) not in _TEXT_EVENTS:
            continue  # most of a long log: turn and step brackets, requests
        if type(event) is AssistantMessageEvent:
            if event.surface_op != "append":
                continue
            fold.reply(event.data.message.tool_calls())
            if (message := surface_message(event)) is not None:
                yield _message_text(message, event.data.error_code, event.data.text_calls_not_run)
        elif type(event) is ToolCallEvent:
            if event.data.over_limit and (item := fold.call(event.seq, event.data)[1]):
                yield _note_text(over_limit_text(item))
        elif type(event) is ToolResultEvent:
            if event.surface_op == "append":
                block = event.data.message.content[0]
                assert type(block) is ToolResultBlock
                if fold.result(block.tool_call_id):
                    continue
                text = "".join([part.text for part in block.content])
                yield tool_result_line(text, is_error=block.is_error)
        elif type(event) is UserMessageEvent:
            if event.surface_op == "append":
                yield human_message_text(event.data)
            elif is_checkpoint_event(event) and passes.first_checkpoint(event) is not None:
                yield COMPACTION_MARKER
        elif type(event) is TurnEndEvent:
            if (note := turn_end_note(event.data.reason)) is not None:
                yield _note_text(note)
        elif type(event) is CommandDoneEvent:
            yield _note_text(event.data.text)
        elif type(event) is CompactionStartEvent:
            passes.started(event.data)
        elif type(event) is CompactionEndEvent and (note := passes.failed(event.data)):
            yield _note_text(note)


def render_human_transcript(events: Iterable[Event]) -> str:
    """The transcript people see of ``events`` (a log, in order), blocks apart by a blank line."""
    return TRANSCRIPT_SEPARATOR.join(transcript_blocks(events))
