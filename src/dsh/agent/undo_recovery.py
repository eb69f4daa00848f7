"""Cleaning up after an undo whose process was killed mid-way (``kill -9``, a power cut): the
files it made beside the files it was changing, and its unanswered command.

Such an undo left its ``command/run`` without a ``command/done`` (``LogScan.interrupted``, with
the turn it was undoing). The clean-up runs when the session is next opened for writing, by any
face (``recover_at_open``, which ``dsh.agent`` registers with ``dsh.surface.repair_on_open``):
under the writer lock, so that undo's process is gone, and before the face has the session, so
the working tree is whole again before an agent or a person's command acts on it. An undo does
it too before it plans (``dsh.agent.undo.undo_last_turn``), for a session opened another way;
after ``Session.open`` it finds nothing left. It
looks beside each file of that turn for exactly the two names that undo gave its own files
(``dsh.agent.undo_files``: ``.NAME.dsh-undo-TAG.new`` / ``.old``, ``TAG`` from its logged command
id) and touches nothing else — no other name, nothing that is not a regular file, and nothing
beside a file undo would refuse to touch (``undo_files.outside``: outside the workspace, or
reached through a symlink), each name reached through its directory opened from the workspace
without following a symlink:

- a ``.new`` is removed: it was a restore's bytes being written; the file itself is whole (it is
  only ever replaced by a rename), either as the turn left it or already restored;
- a ``.old`` is the file as the turn left it, moved aside to be deleted: it is linked back to its
  name (never over a file that is there) and then removed, so nothing the turn made is lost and
  the undo that follows deletes it again; if the name is taken by then, it is left and named.

Then it answers the interrupted command: ``command/done`` {ok: false} saying what it found and
did, one line. At open that line is the session's load warning, and it ends saying the undo is
to be run again and which files the killed undo had already restored (they stay restored; the
undo that follows sees them as "already as before the turn"); from an undo, it is the line the
undo's answer begins with. A session with no unanswered undo is not scanned: the open only
looks at its ``command/run`` and ``command/done`` events (kept by type as the log loads). A dry
run changes nothing: it says what the next undo would clean up.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from dsh.agent.undo_files import (
    Kind,
    Unreadable,
    beside,
    in_directory,
    look,
    outside,
    shown,
    tag_of,
)
from dsh.agent.undo_scan import (
    UNDO_COMMAND,
    FileChange,
    InterruptedUndo,
    LogScan,
    TurnChanges,
    scan_log,
)
from dsh.events import CommandDone, CommandDoneEvent, CommandRunEvent
from dsh.surface import Session

__all__ = [
    "Leftover",
    "clean_up_interrupted",
    "interrupted_lines",
    "leftovers",
    "recover_at_open",
]

_KINDS: tuple[Kind, ...] = ("new", "old")


@dataclass(frozen=True, slots=True)
class Leftover:
    """A file an interrupted undo made beside a file it was changing."""

    path: Path
    file: Path
    """The file it was made beside."""
    kind: Kind


def leftovers(undo: InterruptedUndo, workspace: Path) -> list[Leftover]:
    """The files with ``undo``'s own names beside the files of the turn it was undoing that are
    there now (regular files only; none beside a file undo would not touch)."""
    tag = tag_of(undo.command_id)
    if tag is None or undo.turn is None:
        return []
    root = workspace.resolve()
    files = dict.fromkeys(c.file for c in undo.turn.changes if c.file is not None)
    found: list[Leftover] = []
    for file in files:
        if outside(file, (), root) is not None:
            continue
        for kind in _KINDS:
            path = beside(file, tag, kind)
            try:
                with in_directory(path, root) as dir_fd:
                    info = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append(Leftover(path, file, kind))
    return found


def interrupted_lines(scan: LogScan, workspace: Path) -> list[str]:
    """For a dry run: one line per interrupted undo, naming what the next undo cleans up."""
    lines: list[str] = []
    for undo in scan.interrupted:
        names = ", ".join(shown(left.path, workspace) for left in leftovers(undo, workspace))
        what = f"the next undo cleans up {names}" if names else "it left no file of its own"
        lines.append(f"{_head(undo)}; {what}")
    return lines


def clean_up_interrupted(session: Session, scan: LogScan, workspace: Path) -> list[str]:
    """Clean up after every undo in ``scan.interrupted`` and answer its command (see the module's
    docstring); one line per undo, saying what was done. ``session`` must be open for writing."""
    return _clean_up(session, scan, workspace, at_open=False)


def recover_at_open(session: Session) -> list[str]:
    """``clean_up_interrupted`` for a session just opened for writing, each line ending with
    what is left to do; nothing (and no scan of the log) when no undo is unanswered."""
    if not session.writable or not _unanswered_undo(session):
        return []
    return _clean_up(session, scan_log(session.events), Path(session.header.cwd), at_open=True)


def _unanswered_undo(session: Session) -> bool:
    """Whether an undo's ``command/run`` has no ``command/done`` (read from the per-type index:
    a log's commands, not its events)."""
    runs = session.of_type(CommandRunEvent)
    if not runs:
        return False
    answered = {e.data.command_id for e in session.of_type(CommandDoneEvent)}
    return any(e.data.name == UNDO_COMMAND and e.data.command_id not in answered for e in runs)


def _clean_up(session: Session, scan: LogScan, workspace: Path, *, at_open: bool) -> list[str]:
    lines: list[str] = []
    for undo in scan.interrupted:
        done = [_clean(left, workspace) for left in leftovers(undo, workspace)]
        what = f"cleaned up after it: {', '.join(done)}" if done else "it left no file of its own"
        line = f"{_head(undo)}; {what}"
        if at_open and undo.turn is not None:
            line += f"; {_left_to_do(undo.turn, workspace)}"
        session.append(CommandDone(command_id=undo.command_id, ok=False, text=line))
        lines.append(line)
    if lines:
        session.sync()
    return lines


def _left_to_do(turn: TurnChanges, workspace: Path) -> str:
    """Undo again, naming the turn's files the killed undo had already restored."""
    restored = [shown(file, workspace) for file in _as_before(turn, workspace.resolve())]
    if not restored:
        return "undo again to finish it"
    return f"undo again to finish it ({', '.join(restored)} already as before the turn)"


def _as_before(turn: TurnChanges, root: Path) -> list[Path]:
    """The turn's files that are now as they were before it (gone, for one it created)."""
    first: dict[Path, FileChange] = {}
    for change in turn.changes:
        if change.file is not None:
            first.setdefault(change.file, change)
    found: list[Path] = []
    for file, change in first.items():
        if outside(file, (), root) is not None:
            continue
        try:
            now = look(file, root, keep_up_to=0)
        except Unreadable:
            continue
        if (change.created and not now.exists) or (
            now.exists and now.sha256 == change.sha256_before
        ):
            found.append(file)
    return found


def _head(undo: InterruptedUndo) -> str:
    of_turn = f" of turn {undo.turn.turn}" if undo.turn is not None else ""
    return f"The undo{of_turn} was interrupted (its process ended before it finished)"


def _clean(left: Leftover, workspace: Path) -> str:
    """Remove a ``.new``, put a ``.old`` back; what was done, said in a few words."""
    name, file = shown(left.path, workspace), shown(left.file, workspace)
    aside, own = left.path.name, left.file.name
    try:
        with in_directory(left.path, workspace.resolve()) as fd:
            if left.kind == "new":
                os.unlink(aside, dir_fd=fd)
                return f"removed {name}"
            try:  # never over a file there
                os.link(aside, own, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            except FileExistsError:
                if not _same_file(aside, own, fd):  # else: linked back before a kill
                    return (
                        f"left {name} ({file} is there again; {name} holds it as the turn left it)"
                    )
            os.unlink(aside, dir_fd=fd)
            return f"put back {file}"
    except OSError as exc:
        return f"left {name} ({exc.strerror or exc})"


def _same_file(one: str, other: str, dir_fd: int) -> bool:
    try:
        a = os.stat(one, dir_fd=dir_fd, follow_symlinks=False)
        b = os.stat(other, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
