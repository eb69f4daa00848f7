"""What ``undo`` reads from a session's log: each turn's successful file changes (``write_file`` /
``edit_file`` results and their undo records), its ``bash`` calls, and which turns an earlier
``undo`` already took back.

An undo is logged as ``command/run`` (name ``undo``) → the note to the model (a ``user/message``
of plugin ``undo``) → ``command/done``; a ``command/done`` with ``ok`` whose ``sourceEventSeq``
is a ``turn/start`` marks that turn undone. Everything is read from the log, so a restarted
session skips the same turns. An undo's ``command/run`` without a ``command/done`` is one whose
process was killed mid-way (``LogScan.interrupted``, with the turn it was undoing: the newest
undoable one before it, as that undo found it).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh.events import (
    CommandDoneEvent,
    CommandRunEvent,
    Event,
    OpenCalls,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from dsh.tools.diffs import DIFF_TOOLS
from dsh.tools.undo_record import UNDO_META
from dsh.transcript import logged_diff

UNDO_COMMAND = "undo"
"""The ``command/run`` name of an undo."""
UNDO_PLUGIN = "undo"
"""The plugin of the ``user/message`` that tells the model which files an undo restored."""
SHELL_TOOL = "bash"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One successful ``write_file`` / ``edit_file`` result of a turn."""

    seq: int
    """The ``tool/result``'s seq."""
    tool: str
    file: Path | None
    """The file written (None: the result has no undo record, logged before dsh kept one)."""
    created: bool = False
    sha256_before: str | None = None
    sha256_after: str | None = None
    diff: tuple[str, ...] | None = None
    created_dirs: tuple[Path, ...] = ()


@dataclass(slots=True)
class TurnChanges:
    """A turn, as undo sees it."""

    turn: int
    start_seq: int
    changes: list[FileChange] = field(default_factory=list)
    shell_calls: int = 0
    ended: bool = False


@dataclass(frozen=True, slots=True)
class InterruptedUndo:
    """An undo logged as begun (``command/run``) and never answered (no ``command/done``)."""

    command_id: str
    turn: TurnChanges | None
    """The turn it was undoing (None: there was none, so it touched no file)."""


@dataclass(frozen=True, slots=True)
class LogScan:
    turns: list[TurnChanges]
    """Every turn, oldest first."""
    undone: frozenset[int]
    """The ``turn/start`` seqs of the turns an undo took back."""
    interrupted: tuple[InterruptedUndo, ...] = ()
    """The undos whose process ended before they answered, oldest first."""

    @property
    def open_turn(self) -> TurnChanges | None:
        """The last turn when it has no ``turn/end`` (it runs, or a crash left it open)."""
        last = self.turns[-1] if self.turns else None
        return last if last is not None and not last.ended else None

    def latest_undoable(self) -> TurnChanges | None:
        """The newest turn not undone yet that changed files through the file tools."""
        return _latest_undoable(self.turns, self.undone)


def _latest_undoable(turns: Sequence[TurnChanges], undone: Collection[int]) -> TurnChanges | None:
    for turn in reversed(turns):
        if turn.changes and turn.start_seq not in undone:
            return turn
    return None


def scan_log(events: Sequence[Event]) -> LogScan:
    """Read the turns, their file changes and the undone turns from ``events``."""
    turns: list[TurnChanges] = []
    current: TurnChanges | None = None
    calls: OpenCalls[str] = OpenCalls()
    commands: dict[str, str] = {}
    undone: set[int] = set()
    unanswered: dict[str, InterruptedUndo] = {}
    for event in events:
        if isinstance(event, TurnStartEvent):
            current = TurnChanges(turn=event.data.turn, start_seq=event.seq)
            turns.append(current)
            calls = OpenCalls()
        elif isinstance(event, TurnEndEvent):
            if current is not None:
                current.ended = True
            current = None
        elif isinstance(event, ToolCallEvent):
            calls.open(event.data.call_id, event.data.name)
            if current is not None and event.data.name == SHELL_TOOL:
                current.shell_calls += 1
        elif isinstance(event, ToolResultEvent) and event.surface_op == "append":
            block = event.data.message.content[0]
            name = calls.answer(getattr(block, "tool_call_id", ""))
            failed = event.data.error is not None or getattr(block, "is_error", False)
            if current is not None and name in DIFF_TOOLS and not failed:
                current.changes.append(_change(event.seq, name or "", event.data.meta))
        elif isinstance(event, CommandRunEvent):
            run = event.data
            commands[run.command_id] = run.name
            if run.name == UNDO_COMMAND:
                undoing = _latest_undoable(turns, undone)
                unanswered[run.command_id] = InterruptedUndo(run.command_id, undoing)
        elif isinstance(event, CommandDoneEvent):
            done = event.data
            is_undo = commands.get(done.command_id) == UNDO_COMMAND
            unanswered.pop(done.command_id, None)
            if done.ok and is_undo and done.source_event_seq is not None:
                undone.add(done.source_event_seq)
    return LogScan(turns, frozenset(undone), tuple(unanswered.values()))


def _change(seq: int, tool: str, meta: dict[str, Any] | None) -> FileChange:
    record = (meta or {}).get(UNDO_META)
    if not isinstance(record, dict) or not isinstance(record.get("file"), str):
        return FileChange(seq=seq, tool=tool, file=None)
    dirs = record.get("createdDirs")
    return FileChange(
        seq=seq,
        tool=tool,
        file=Path(record["file"]),
        created=record.get("created") is True,
        sha256_before=_text(record.get("sha256Before")),
        sha256_after=_text(record.get("sha256After")),
        diff=logged_diff(meta),
        created_dirs=tuple(Path(d) for d in dirs if isinstance(d, str))
        if isinstance(dirs, list)
        else (),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
