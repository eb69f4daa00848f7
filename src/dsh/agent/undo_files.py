"""The file side of ``undo``: reading what is there now, and applying a plan all or nothing.

Every file of the plan is checked again just before it is touched (its SHA-256 still the one the
plan was made from). A file is restored as ``write_file`` writes one (``dsh.tools.atomic_write``):
a temporary file beside it, fsynced, given the file's permission bits, owner and group, renamed
over it, and its directory fsynced; a file is deleted by renaming it aside first and unlinking it
only once every file of the plan is done, then its directory is fsynced (and the parent of each
empty directory removed after it), so what the log then says undone stays undone after a power
cut. Every read, write, rename and removal goes through the file's directory opened one name at
a time from the workspace without following a symlink (``open_directory_within``,
``dsh.tools.atomic_write``): a directory on the way swapped for a symlink after the plan checked
the path fails the step instead of leading it out of the workspace. If any step fails, the
steps already done are taken back (the old bytes written back, the file renamed back), and what
could not be taken back is said by name. A stop
asked for (``stop``: a Ctrl-C the undo holds off, ``dsh.agent.held_interrupts``) is looked at
between steps, never inside one: the steps done are taken back the same way. An exception raised
inside a step (a bug) takes them back too before it goes on.

The names beside a file ``NAME`` are dsh's own, tagged with the undo's logged command id (``TAG``
is its hex), so an undo killed mid-way (``kill -9``: no ``except`` runs) can be cleaned up after
by the next one (``dsh.agent.undo_recovery``) without touching any other file:

- ``.NAME.dsh-undo-TAG.new``: a restore's bytes being written; ``NAME`` itself is untouched until
  the rename replaces it whole, so this one is only ever a temporary copy;
- ``.NAME.dsh-undo-TAG.old``: ``NAME`` moved aside to be deleted (its bytes as the turn left them).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import io
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dsh.agent.thread_steps import Steps, run_here
from dsh.config.small_file import open_directory_within
from dsh.errors import ToolError
from dsh.tools.atomic_write import fsync_directory, write_regular_file
from dsh.tools.undo_record import sha256_hex
from dsh.tools.workspace import is_inside, resolve_in_workspace

Action = Literal["restore", "delete", "none"]
Kind = Literal["new", "old"]

MARK = ".dsh-undo-"
"""What every name undo gives a file beside the one it changes holds (see the module's
docstring)."""
_TAG = re.compile(r"[0-9a-f]{8}")


def tag_of(command_id: str) -> str | None:
    """The tag of the names an undo logged as ``command_id`` gives its files (the id's hex), or
    None for an id this dsh did not make (``cmd-`` and 8 hex digits)."""
    tag = command_id.removeprefix("cmd-")
    return tag if command_id.startswith("cmd-") and _TAG.fullmatch(tag) else None


def beside(file: Path, tag: str, kind: Kind) -> Path:
    """The name undo gives a file it makes beside ``file`` (see the module's docstring)."""
    return file.with_name(f".{file.name}{MARK}{tag}.{kind}")


class Unreadable(Exception):
    """The path is there but is not a regular file dsh can read."""


@dataclass(frozen=True, slots=True)
class Found:
    """A file as it is now: absent, or its bytes' hash (and the bytes, when asked for)."""

    exists: bool
    sha256: str | None = None
    data: bytes | None = None


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def look(path: Path, root: Path, *, keep_up_to: int) -> Found:
    """``path`` now: its hash, and its bytes when it holds at most ``keep_up_to`` of them; read
    through its directory opened from ``root`` (the resolved workspace) without following a
    symlink. Raises ``Unreadable`` for something other than a regular file (a symlink
    included), or a path whose way from ``root`` is not directories only."""
    try:
        with in_directory(path, root) as dir_fd:
            try:
                fd = os.open(path.name, _READ_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                return Found(exists=False)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENXIO):
                    raise Unreadable("no longer a regular file") from exc
                raise
            with io.FileIO(fd, "rb") as fh:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise Unreadable("no longer a regular file")
                if info.st_size <= keep_up_to:
                    data = fh.readall()
                    return Found(True, sha256_hex(data), data)
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
    except FileNotFoundError:  # a directory on the way is gone: so is the file
        return Found(exists=False)
    except OSError as exc:
        raise Unreadable(_why(exc)) from exc
    return Found(True, digest, None)


@contextlib.contextmanager
def in_directory(path: Path, root: Path) -> Iterator[int]:
    """The directory ``path`` is in, opened from ``root`` without following a symlink
    (``open_directory_within``), closed after."""
    dir_fd = open_directory_within(root, path.parent)
    try:
        yield dir_fd
    finally:
        os.close(dir_fd)


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a directory on its way is a symlink or not a directory now"
    return exc.strerror or str(exc)


@dataclass(frozen=True, slots=True)
class FileStep:
    """What undo does to one file."""

    file: Path
    shown: str
    action: Action
    now: Found
    """The file as the plan found it (what the tool left, or what was there before the turn)."""
    root: Path
    """The resolved workspace the file is in: every step on it goes through its directory
    opened from there (``in_directory``)."""
    target: bytes | None = None
    """The bytes to restore (``restore`` only)."""
    created_dirs: tuple[Path, ...] = ()
    """Directories the turn created for a file it created, removed after it if empty."""


@dataclass(slots=True)
class Applied:
    """How applying a plan went."""

    failed: str | None = None
    """The step that failed, said in one line (None: every step was done)."""
    kept: list[str] = field(default_factory=list)
    """Files left undone after a failure or a stop because they could not be put back
    (named)."""
    stopped: bool = False
    """A stop was asked for before every step was done: the steps done were taken back."""


def apply_steps(
    steps: Sequence[FileStep], tag: str, *, stop: Callable[[], bool] = lambda: False
) -> Applied:
    """Do ``steps`` in order, all or nothing (see the module's docstring); ``tag`` names the
    files made beside them (``tag_of`` the undo's command id); ``stop`` is asked before each
    step whether to stop there. On the calling thread."""
    return run_here(applying(steps, tag, stop=stop))


def applying(
    steps: Sequence[FileStep], tag: str, *, stop: Callable[[], bool] = lambda: False
) -> Steps[Applied]:
    """``apply_steps`` with each file's work yielded (``dsh.agent.thread_steps``): ``stop`` is
    asked where this generator runs, between files — on the event loop, whose thread runs the
    signal handler a stop comes from, when the work runs in worker threads."""
    done: list[tuple[FileStep, Path | None]] = []
    for step in steps:
        if step.action == "none":
            continue
        if stop():
            kept: list[str] = yield functools.partial(_take_back, done, tag)
            return Applied(kept=kept, stopped=True)
        try:
            aside: Path | None = yield functools.partial(_checked_do, step, tag)
        except (OSError, _Changed) as exc:
            why = str(exc) if isinstance(exc, _Changed) else _why(exc)
            kept = yield functools.partial(_take_back, done, tag)
            return Applied(failed=f"{step.shown}: {why}", kept=kept)
        except GeneratorExit:  # closed half way, its driver gone: put the files back here
            _take_back(done, tag)
            raise
        except BaseException:  # Ctrl-C, SIGTERM: no file left aside, none half undone
            yield functools.partial(_take_back, done, tag)
            raise
        done.append((step, aside))
    yield functools.partial(_finish, done)
    return Applied()


def _checked_do(step: FileStep, tag: str) -> Path | None:
    """``step``, once its file is checked to be as planned still."""
    _still_as_planned(step)
    return _do(step, tag)


def _finish(done: list[tuple[FileStep, Path | None]]) -> None:
    """Every step done: remove what was moved aside, then the directories the turn made for
    it while empty, and sync the directory that held each name removed."""
    for step, aside in done:
        if aside is not None:
            with contextlib.suppress(OSError), in_directory(aside, step.root) as dir_fd:
                os.unlink(aside.name, dir_fd=dir_fd)
    synced: set[Path] = set()
    for step, aside in done:  # once every aside is gone: two files may share a directory
        if aside is not None:
            removed = _remove_empty(step.created_dirs, step.root)
            named_in = removed[-1].parent if removed else step.file.parent  # still there
            if named_in not in synced:
                synced.add(named_in)
                with contextlib.suppress(OSError):  # the file is gone: only its name may linger
                    fsync_directory(named_in)


class _Changed(Exception):
    pass


def _still_as_planned(step: FileStep) -> None:
    try:
        found = look(step.file, step.root, keep_up_to=0)
    except Unreadable as exc:
        raise _Changed(str(exc)) from exc
    if found.exists != step.now.exists or found.sha256 != step.now.sha256:
        raise _Changed("changed while undo ran")


def _do(step: FileStep, tag: str) -> Path | None:
    """Restore or delete one file; a deleted file's aside name (unlinked at the end)."""
    if step.action == "restore":
        assert step.target is not None
        _replace(step, step.target, tag)
        return None
    aside = beside(step.file, tag, "old")
    _rename(step.file, aside, step.root)
    return aside


def _rename(source: Path, target: Path, root: Path) -> None:
    """Rename ``source`` to ``target`` (a name in the same directory) through that directory
    opened from ``root`` (``in_directory``)."""
    with in_directory(source, root) as dir_fd:
        os.rename(source.name, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def _take_back(done: list[tuple[FileStep, Path | None]], tag: str) -> list[str]:
    """Undo the steps done, newest first; the files that could not be put back."""
    kept: list[str] = []
    for step, aside in reversed(done):
        try:
            if aside is not None:
                _rename(aside, step.file, step.root)
            else:
                assert step.now.data is not None
                _replace(step, step.now.data, tag)
        except OSError:
            kept.append(step.shown)
    return kept[::-1]


def _replace(step: FileStep, data: bytes, tag: str) -> None:
    """Make ``data`` the bytes of ``step.file`` as ``write_file`` writes a file, through the
    temporary file ``beside(path, tag, "new")`` in its directory opened from the workspace (see
    the module's docstring); ``OSError`` for what stopped it, the file as it was."""
    temp = beside(step.file, tag, "new").name
    try:
        write_regular_file(step.file, data, step.shown, temp_name=temp, within=step.root)
    except ToolError as exc:  # no longer a regular file: nothing was written
        why = str(exc).removeprefix(f"{step.shown}: ")
        raise OSError(errno.EINVAL, why, step.shown) from exc


def outside(file: Path, created_dirs: tuple[Path, ...], root: Path) -> str | None:
    """Why undo may not touch ``file`` (and the directories the turn made for it), or None: it
    must be where the workspace resolves its path now (``resolve_in_workspace``, as the file
    tools resolve a path: every symlink on the way followed), inside ``root`` (the resolved
    workspace). A log names any path (an imported one, a crafted one); a symlink put on the way
    since the turn leads anywhere."""
    if not file.is_absolute():
        return "its undo record names no absolute path, so undo does not touch it"
    try:
        resolved = resolve_in_workspace(str(file), root)
    except ToolError:
        return (
            "it is outside the workspace (it, or a symlink on its way, leads out); undo only "
            "changes files inside the workspace"
        )
    if resolved != file:
        return (
            "a symlink on its way now leads elsewhere in the workspace; undo only changes the "
            "file the turn wrote"
        )
    if any(d == root or not file.is_relative_to(d) or not is_inside(d, root) for d in created_dirs):
        return "its undo record names a directory made for it that does not hold it"
    return None


def shown(file: Path, workspace: Path) -> str:
    """``file`` as people are shown it: relative to the workspace when it is inside it."""
    try:
        return file.relative_to(workspace).as_posix()
    except ValueError:
        return str(file)


def _remove_empty(directories: tuple[Path, ...], root: Path) -> list[Path]:
    """Remove the directories a turn created, innermost first, while they are empty (each
    through its parent opened from ``root``); those removed."""
    removed: list[Path] = []
    for directory in reversed(directories):
        try:
            with in_directory(directory, root) as dir_fd:
                os.rmdir(directory.name, dir_fd=dir_fd)
        except OSError:
            break
        removed.append(directory)
    return removed
