"""What an ``edit_file`` / ``write_file`` call would change, as its approval shows it before
the call runs (the terminal UI's prompt, the web page's).

With the workspace at hand the change is read from the file as it is now, by the tool's own
checks (``dsh.tools.files``), so the approval shows what will really happen:

- the diff of the file's text now against the text the call would leave (``lines``);
- or, when the call would fail — ``old`` not in the file or in it more than once, an empty
  ``old`` or one equal to ``new``, a path outside the workspace, no such file, a directory, a
  file that is not text — no diff at all, and the tool's own error (``fails``): approving it
  only hands the model that error;
- or, when the file cannot be read for a diff here (larger than a diff is made of: a FIFO or a
  huge file is never read) but the call may still work, the diff of the arguments alone with a
  ``note`` saying so; an overwrite of a file that is not shown says what it replaces.

A path that leads elsewhere through a symlink (``NOTES.md`` → ``src/auth.py``) says so first in
``note``: the file that will change is the one it leads to, and approving ``NOTES.md`` must not
hide that.

Without a workspace (a tool card drawn before its result) the change is the arguments'
alone, ``old`` → ``new`` or an empty file → ``content``, as before.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.errors import ToolError
from dsh.tools.diffs import DIFF_TOOLS, MAX_DIFF_CHARS, read_small_text, unified_diff
from dsh.tools.files import (
    check_edit_arguments,
    edit_target,
    edit_text,
    occurrence,
    read_edit_source,
    write_target,
)
from dsh.tools.workspace import display_path

READ_UP_TO = MAX_DIFF_CHARS * 4
"""The largest file read to plan a change (4 bytes a character): ``read_small_text``'s bound."""


@dataclass(frozen=True, slots=True)
class PlannedChange:
    """What a file-writing call would do, for people to approve."""

    path: str
    """The path as the call names it (the diff's headers name it so)."""
    lines: tuple[str, ...] | None = None
    """The unified diff lines of the change; None when there is none to show (the call would
    fail, or either side is too large to diff)."""
    fails: str | None = None
    """Why the call would fail, in the tool's words; None when it would run."""
    note: str | None = None
    """What the diff is when it is not the file's own (the arguments alone), or what an
    overwrite replaces that is not shown; first, which file a path through a symlink changes."""
    elsewhere: bool = False
    """The path leads to another file through a symlink (``note`` names it)."""


def planned_change(tool: str, args: dict[str, Any], workspace: Path | None) -> PlannedChange | None:
    """The change an ``edit_file`` / ``write_file`` call asks for (see the module's docstring);
    None for another tool or arguments that name no edit (no ``path``, a non-text ``old``)."""
    if tool not in DIFF_TOOLS:
        return None
    path = args.get("path")
    if not isinstance(path, str):
        return None
    if tool == "write_file":
        content = args.get("content")
        if not isinstance(content, str):
            return None
        return _said_where(_write(path, content, workspace), path, workspace, write_target)
    old, new = args.get("old"), args.get("new")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    return _said_where(_edit(path, old, new, workspace), path, workspace, edit_target)


def _said_where(
    change: PlannedChange,
    path: str,
    workspace: Path | None,
    target: Callable[[str, Path], tuple[Path, str]],
) -> PlannedChange:
    """``change`` whose note says first which file it changes when ``path`` leads there through
    a symlink (a call that fails says its own error instead)."""
    if workspace is None or change.fails is not None:
        return change
    try:
        _, shown = target(path, workspace)
    except (ToolError, OSError):
        return change
    named = display_path(Path(os.path.normpath(workspace.resolve() / path)), workspace)
    if named == shown:
        return change
    leads = f"{named} is a link: this changes {shown}"
    note = leads if change.note is None else f"{leads}; {change.note}"
    return PlannedChange(change.path, change.lines, change.fails, note, elsewhere=True)


def planned_diff(tool: str, args: dict[str, Any], workspace: Path | None) -> list[str] | None:
    """The diff lines ``planned_change`` shows (None: no diff to show)."""
    change = planned_change(tool, args, workspace)
    return None if change is None or change.lines is None else list(change.lines)


def _edit(path: str, old: str, new: str, workspace: Path | None) -> PlannedChange:
    if workspace is None:
        return _diffed(path, old, new)
    try:
        check_edit_arguments(old, new)
        resolved, shown = edit_target(path, workspace)
        if resolved.stat().st_size > READ_UP_TO:
            note = f"{shown} is too large to show here: the diff is of the call's old and new"
            return _diffed(path, old, new, note=note)
        text = edit_text(read_edit_source(resolved, shown), shown)
        occurrence(text, old, shown)
    except ToolError as exc:
        return PlannedChange(path, fails=str(exc))
    except OSError as exc:
        return PlannedChange(path, fails=_io_error(exc))
    edited = text.replace(old, new, 1)
    lines = unified_diff(path, text, edited)
    if lines is None:  # more lines than a diff is made of
        return _diffed(
            path,
            old,
            new,
            note=f"{shown} is too large to diff: the diff is of the call's old and new",
        )
    return PlannedChange(path, tuple(lines))


def _write(path: str, content: str, workspace: Path | None) -> PlannedChange:
    if workspace is None:
        return _diffed(path, "", content)
    try:
        resolved, shown = write_target(path, workspace)
        found = resolved.stat() if resolved.exists() else None
    except ToolError as exc:
        return PlannedChange(path, fails=str(exc))
    except OSError as exc:
        return PlannedChange(path, fails=_io_error(exc))
    if found is None:  # a new file
        return _diffed(path, "", content, created=True)
    if not stat.S_ISREG(found.st_mode):
        return PlannedChange(path, fails=f"{shown} is not a regular file")
    current = read_small_text(resolved)
    if current is None:
        what = "too large" if found.st_size > READ_UP_TO else "not UTF-8 text"
        note = f"replaces {shown} ({found.st_size:,} bytes, not shown: {what}) with this content"
        return _diffed(path, "", content, note=note)
    return _diffed(path, current, content)


def _diffed(
    path: str, before: str, after: str, *, note: str | None = None, created: bool = False
) -> PlannedChange:
    lines = unified_diff(path, before, after, created=created)
    if lines is None:
        return PlannedChange(path, note=f"{path}: too large to show as a diff")
    return PlannedChange(path, tuple(lines), note=note)


def _io_error(exc: OSError) -> str:
    """An ``OSError`` as the tools say it (``dsh.tools.files._in_thread``)."""
    where = f" {exc.filename}" if exc.filename else ""
    return f"I/O error{where}: {exc.strerror or exc}"
