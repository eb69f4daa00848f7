"""Undo the file changes the model made in its last turn (``dsh undo``; the faces' ``/undo``).

The faces call one function on an idle session they hold open for writing::

    undo_last_turn(session, *, dry_run=False, args="") -> UndoResult
    await undo_last_turn_in_threads(session, *, dry_run=False, args="") -> UndoResult

(``SessionRunner.undo`` / ``start_undo`` do it for a runner, refusing while a turn or a
``/compact`` runs). The first does everything on the calling thread (``dsh undo``; the web's
handler, on its loop); the second, the terminal UI's, does the file reads and writes in worker
threads and touches the session only on the calling event loop (``dsh.agent.thread_steps``:
the undo is one generator of steps either way). ``UndoResult.lines`` are what to show; ``ok``
says whether the command did what was asked.

It takes the newest turn not undone yet with successful ``write_file`` / ``edit_file`` results
(``dsh.agent.undo_scan``) and reverts its changes, newest first, from each result's undo record
(``dsh.tools.undo_record``): a created file is deleted, an overwritten or edited one gets back
its exact old bytes by taking the logged diff back, checked against the recorded SHA-256. It
plans every file before touching any: a file changed since the turn (by the person, by
``bash``, by a later tool), or whose change the log cannot take back exactly (no diff logged:
binary, or over the diff's size bounds; a masked secret in it), refuses the whole undo with one
line per file, and nothing changes. Changes made through ``bash`` are not undone, and the result
says how many ``bash`` calls the turn made.

Logged with the command events: ``command/run`` {name ``undo``}, then (when it undid the turn) a
``user/message`` of plugin ``undo`` telling the model which files are back as they were — the
surface carries it in the next request — then ``command/done`` {ok, text}, whose
``sourceEventSeq`` is the undone turn's ``turn/start``: so a second undo takes the turn before,
after a restart too. The ``command/run`` is on stable storage before any file is touched, so
whatever stops the undo after that (``kill -9``, a power cut) leaves a command the clean-up below
finds. A dry run and "nothing to undo" log nothing (but the answer to a killed undo, below).

A Ctrl-C while the files change waits (``dsh.agent.held_interrupts``: SIGINT is held in the main
thread from the ``command/run`` to the ``command/done``): it is looked at between files, never
inside a rename, and a second one cannot stop the steps being taken back. Before every file is
done, the files done are put back as the turn left them and the command is answered ``stopped:
interrupted before it was done``; after, the undo finishes. Then the interrupt goes on as it
would have (``KeyboardInterrupt`` in ``dsh undo``, which prints the answer first). Only a kill
can leave files of the undo's own beside the workspace's, under a command never answered:

An undo whose process was killed mid-way is cleaned up after when the session is next opened
for writing (``dsh.agent.undo_recovery``): the files it made beside the workspace's files, named
after its command, are removed or put back, and its command is answered. An undo on a session
opened otherwise does that itself before it plans, its answer beginning with a line saying so. A
dry run (on a session opened read-only) only says what that would clean up.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import secrets
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dsh.agent.held_interrupts import HeldInterrupts
from dsh.agent.thread_steps import Steps, run_here, run_in_threads
from dsh.agent.undo_files import (
    FileStep,
    Found,
    Unreadable,
    applying,
    look,
    outside,
    shown,
    tag_of,
)
from dsh.agent.undo_recovery import clean_up_interrupted, interrupted_lines
from dsh.agent.undo_scan import (
    UNDO_COMMAND,
    UNDO_PLUGIN,
    FileChange,
    LogScan,
    TurnChanges,
    scan_log,
)
from dsh.errors import DshError, error_line
from dsh.events import CommandDone, CommandRun, Message, PluginSource, TextBlock
from dsh.surface import Session
from dsh.tools.diffs import MAX_DIFF_CHARS, MAX_DIFF_LINES
from dsh.tools.files import WriteFileTool
from dsh.tools.protected import protected_write
from dsh.tools.secrets import MASK
from dsh.tools.undo_record import PatchMismatch, reverse_patch, sha256_hex

__all__ = ["UndoResult", "undo_last_turn", "undo_last_turn_in_threads"]

KEEP_BYTES = 4 * MAX_DIFF_CHARS + 1024
"""Bytes of a file read whole (a file with a logged diff is never larger: 4 bytes a
character); a larger one is only hashed."""
NOTHING_TO_UNDO = "Nothing to undo: no turn left with write_file or edit_file changes."
_MASK_MARK = MASK.split("{", 1)[0]
_WRITE_TOOL = WriteFileTool()
"""What a restore or a delete is checked as against the protected files: a ``write_file``."""


@dataclass(frozen=True, slots=True)
class UndoResult:
    """What an undo did (or would do, or why not): ``lines`` for people, one fact a line."""

    ok: bool
    lines: tuple[str, ...]
    turn: int | None = None
    """The turn undone (or to undo, or refused); None when there was none."""
    restored: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def undo_last_turn(session: Session, *, dry_run: bool = False, args: str = "") -> UndoResult:
    """Undo the newest turn's file changes not undone yet (see the module's docstring).
    ``session`` must be idle and, unless ``dry_run``, open for writing (its writer lock
    held); ``args`` is what the person gave after the command, logged with it. Everything
    on the calling thread."""
    return run_here(_undo_steps(session, dry_run=dry_run, args=args))


async def undo_last_turn_in_threads(
    session: Session, *, dry_run: bool = False, args: str = ""
) -> UndoResult:
    """``undo_last_turn``, its file reads and writes each in a worker thread, ``session``
    touched only on this event loop (a Ctrl-C is held there while the files change). Not
    stopped half way: a cancel waits until the files and the log agree, then is raised."""
    return await run_in_threads(_undo_steps(session, dry_run=dry_run, args=args))


def _undo_steps(session: Session, *, dry_run: bool, args: str) -> Steps[UndoResult]:
    """The undo, its file work yielded (``dsh.agent.thread_steps``). The clean-up after a
    killed undo stays in line: it finds nothing in a session opened for writing, which was
    cleaned up as it opened (``recover_at_open``)."""
    scan = scan_log(session.events)
    if scan.open_turn is not None:
        return UndoResult(False, (f"Not undone: turn {scan.open_turn.turn} has not ended.",))
    workspace = Path(session.header.cwd)
    earlier: list[str]
    if dry_run:
        earlier = yield lambda: interrupted_lines(scan, workspace)
    elif session.writable:
        earlier = clean_up_interrupted(session, scan, workspace)
    else:
        earlier = []  # refused below
    result = yield from _undo(session, scan, workspace, dry_run=dry_run, args=args)
    if not earlier:
        return result
    return dataclasses.replace(result, lines=(*earlier, *result.lines))


def _undo(
    session: Session, scan: LogScan, workspace: Path, *, dry_run: bool, args: str
) -> Steps[UndoResult]:
    """``undo_last_turn`` once the interrupted undos are dealt with."""
    turn = scan.latest_undoable()
    if turn is None:
        return UndoResult(True, (NOTHING_TO_UNDO,), dry_run=dry_run)
    if not dry_run and not session.writable:
        return UndoResult(False, ("Not undone: the session is open read-only.",), turn.turn)
    planned: tuple[list[FileStep], list[str]] = yield lambda: _plan(turn, workspace)
    steps, refusals = planned
    if refusals:
        head = f"Not undone: turn {turn.turn}'s file changes cannot be taken back:"
        result = UndoResult(False, (head, *(f"  {line}" for line in refusals)), turn.turn)
        if not dry_run:
            command_id = _log_run(session, args)
            session.append(CommandDone(command_id=command_id, ok=False, text=result.text))
        return _as_dry(result) if dry_run else result
    if dry_run:
        return _described(turn, steps, dry_run=True)
    with HeldInterrupts() as interrupts:  # a Ctrl-C waits until the files and the log agree
        return (yield from _apply(session, turn, steps, args, stop=lambda: interrupts.requested))


def _apply(
    session: Session,
    turn: TurnChanges,
    steps: list[FileStep],
    args: str,
    *,
    stop: Callable[[], bool],
) -> Steps[UndoResult]:
    """Log the undo, change the files all or nothing (stopping between files when ``stop``
    says so), and answer the command."""
    command_id = _log_run(session, args)
    session.sync()  # on disk before any file is: a power cut mid-way is cleaned up as a kill is
    tag = tag_of(command_id)
    assert tag is not None
    try:
        applied = yield from applying(steps, tag, stop=stop)
    except BaseException as exc:  # a bug mid-way: answer the command, name the files
        touched = ", ".join(s.shown for s in steps if s.action != "none")
        why = error_line(exc).removesuffix(":")  # an exception without a message
        text = f"Undo of turn {turn.turn} stopped: {why}; check {touched}"
        with contextlib.suppress(DshError):
            session.append(CommandDone(command_id=command_id, ok=False, text=text))
        raise
    if applied.stopped:
        result = _stopped(turn, steps, applied.kept)
        if applied.kept:
            _tell_model(session, command_id, [s for s in steps if s.shown in applied.kept])
        session.append(CommandDone(command_id=command_id, ok=False, text=result.text))
        session.sync()
        return result
    if applied.failed is not None:
        result = _failed(turn, steps, applied.failed, applied.kept)
        if applied.kept:
            _tell_model(session, command_id, [s for s in steps if s.shown in applied.kept])
        session.append(CommandDone(command_id=command_id, ok=False, text=result.text))
        return result
    result = _described(turn, steps, dry_run=False)
    _tell_model(session, command_id, steps, shell_calls=turn.shell_calls)
    session.append(
        CommandDone(
            command_id=command_id, ok=True, text=result.text, source_event_seq=turn.start_seq
        )
    )
    session.sync()
    return result


# ---- planning ---------------------------------------------------------------------------------


def _plan(turn: TurnChanges, workspace: Path) -> tuple[list[FileStep], list[str]]:
    """One step per file the turn changed, the file changed last first; or the refusals."""
    root = workspace.resolve()
    chains: dict[Path, list[FileChange]] = defaultdict(list)
    refusals: list[str] = []
    for change in turn.changes:
        if change.file is None:
            refusals.append(
                f"the {change.tool} result at seq {change.seq} was logged without an undo record "
                "(by an older dsh, or dropped on import)"
            )
        else:
            chains[change.file].append(change)
    steps: list[FileStep] = []
    ordered = sorted(chains.items(), key=lambda item: -item[1][-1].seq)
    for file, chain in ordered:
        name = shown(file, workspace)
        why = outside(file, chain[0].created_dirs, root)
        if why is not None:
            refusals.append(f"{name}: {why}")
            continue
        planned = _plan_file(file, name, chain, turn.turn, root)
        if isinstance(planned, FileStep):
            planned = _protected(planned) or planned
        if isinstance(planned, str):
            refusals.append(planned)
        else:
            steps.append(planned)
    return steps, refusals


def _protected(step: FileStep) -> str | None:
    """Why undo may not write ``step``'s file, or None: a protected file (``dsh.tools.protected``:
    dsh's or git's configuration, the git hooks), which the file tools never write unasked. The
    undo is refused; the person restores it by hand."""
    if step.action == "none":
        return None
    content = "" if step.target is None else step.target.decode("utf-8", errors="replace")
    found = protected_write(_WRITE_TOOL, {"path": str(step.file), "content": content}, step.root)
    if found is None:
        return None
    return (
        f"{step.shown}: {found.why}, which the file tools never do unasked; undo does not "
        "change it (restore it by hand)"
    )


def _plan_file(
    file: Path, shown: str, chain: list[FileChange], turn: int, root: Path
) -> FileStep | str:
    """The step that takes ``chain`` (one file's changes in the turn, oldest first) back, or
    the one line that says why it cannot."""
    first, last = chain[0], chain[-1]
    for change in chain:
        if change.sha256_after is None:
            return f"{shown}: the {change.tool} result at seq {change.seq} has no undo record"
        if not change.created and (change.diff is None or change.sha256_before is None):
            return (
                f"{shown}: {change.tool} logged no diff of its change (a binary file, or over "
                f"{MAX_DIFF_CHARS} characters or {MAX_DIFF_LINES} lines), so it cannot be "
                "restored exactly"
            )
    for before, after in itertools.pairwise(chain):
        if after.created or after.sha256_before != before.sha256_after:
            return (
                f"{shown}: changed between turn {turn}'s file tool calls (by bash?), so it "
                "cannot be restored exactly"
            )
    try:
        now = look(file, root, keep_up_to=KEEP_BYTES)
    except Unreadable as exc:
        return f"{shown}: {exc}"
    if now.exists and now.sha256 == last.sha256_after:
        if first.created:
            return FileStep(file, shown, "delete", now, root, created_dirs=first.created_dirs)
        return _restore_step(file, shown, chain, now, root)
    if (first.created and not now.exists) or (now.exists and now.sha256 == first.sha256_before):
        return FileStep(file, shown, "none", now, root)  # already as it was before the turn
    what = "deleted" if not now.exists else f"its content is not what {last.tool} left"
    return f"{shown}: changed since turn {turn} ({what})"


def _restore_step(
    file: Path, shown: str, chain: list[FileChange], now: Found, root: Path
) -> FileStep | str:
    """Take the chain's diffs back, newest first, each result checked against its hash."""
    if now.data is None:  # a diffed change leaves at most KEEP_BYTES: not met in practice
        return f"{shown}: over {KEEP_BYTES} bytes, so it cannot be restored from its diff"
    try:
        text = now.data.decode("utf-8")
        for change in reversed(chain):
            assert change.diff is not None
            text = reverse_patch(change.diff, text)
            if sha256_hex(text.encode("utf-8")) != change.sha256_before:
                raise PatchMismatch("the result is not the file's old bytes")
    except (UnicodeDecodeError, PatchMismatch):
        masked = any(_MASK_MARK in line for change in chain for line in change.diff or ())
        why = " (it holds a masked secret)" if masked else ""
        return f"{shown}: its logged diff does not give back its exact old content{why}"
    return FileStep(file, shown, "restore", now, root, target=text.encode("utf-8"))


# ---- results and the log ----------------------------------------------------------------------


def _described(turn: TurnChanges, steps: list[FileStep], *, dry_run: bool) -> UndoResult:
    restored = tuple(s.shown for s in steps if s.action == "restore")
    deleted = tuple(s.shown for s in steps if s.action == "delete")
    already = [s.shown for s in steps if s.action == "none"]
    restore, delete = ("would restore", "would delete") if dry_run else ("restored", "deleted")
    head = f"Would undo turn {turn.turn}:" if dry_run else f"Undid turn {turn.turn}:"
    lines = [head]
    lines += [f"  {restore} {shown}" for shown in restored]
    lines += [f"  {delete} {shown} (created by the turn)" for shown in deleted]
    lines += [f"  {shown} is already as before the turn" for shown in already]
    if turn.shell_calls:
        calls = "call" if turn.shell_calls == 1 else "calls"
        lines.append(
            f"  not undone: what the turn's {turn.shell_calls} bash {calls} changed "
            "(bash changes cannot be undone)"
        )
    return UndoResult(True, tuple(lines), turn.turn, restored, deleted, dry_run)


def _as_dry(result: UndoResult) -> UndoResult:
    lines = (result.lines[0].replace("Not undone:", "Would not undo:"), *result.lines[1:])
    return UndoResult(result.ok, lines, result.turn, dry_run=True)


def _failed(turn: TurnChanges, steps: list[FileStep], failed: str, kept: list[str]) -> UndoResult:
    return _not_done(f"Undo of turn {turn.turn} failed: {error_line(failed)}", turn, steps, kept)


def _stopped(turn: TurnChanges, steps: list[FileStep], kept: list[str]) -> UndoResult:
    head = f"Undo of turn {turn.turn} stopped: interrupted before it was done"
    return _not_done(head, turn, steps, kept)


def _not_done(head: str, turn: TurnChanges, steps: list[FileStep], kept: list[str]) -> UndoResult:
    """An undo whose steps were taken back: ``head``, then how the files are left."""
    lines = [head]
    if kept:
        lines.append(f"  these files are restored and could not be put back: {', '.join(kept)}")
        others = [s.shown for s in steps if s.action != "none" and s.shown not in kept]
        if others:
            lines.append(f"  these are as the turn left them: {', '.join(others)}")
    else:
        lines.append("  nothing changed: every file is as the turn left it")
    return UndoResult(False, tuple(lines), turn.turn)


def _log_run(session: Session, args: str) -> str:
    command_id = f"cmd-{secrets.token_hex(4)}"
    session.append(CommandRun(command_id=command_id, name=UNDO_COMMAND, args=args))
    return command_id


def _tell_model(
    session: Session, command_id: str, steps: list[FileStep], *, shell_calls: int = 0
) -> None:
    """The note the next request carries, so the model does not believe its edits stand."""
    files = [
        f"{s.shown} ({'deleted' if s.action == 'delete' else 'restored'})"
        for s in steps
        if s.action != "none"
    ] + [f"{s.shown} (already as before)" for s in steps if s.action == "none"]
    text = (
        "[undo] The user undid the file changes you made with write_file/edit_file in one of "
        f"your earlier turns. These files are back as they were before that turn: "
        f"{', '.join(files)}. Your edits to them no longer stand; read a file again before "
        "you change it."
    )
    if shell_calls:
        text += f" What that turn's {shell_calls} bash call(s) changed was not undone."
    session.append(
        Message(
            id=f"undo-{command_id}",
            role="user",
            content=(TextBlock(text=text),),
            source=PluginSource(plugin=UNDO_PLUGIN, source_command_id=command_id),
        )
    )
