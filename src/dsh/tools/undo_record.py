"""What ``write_file`` and ``edit_file`` record so their change can be undone exactly
(``dsh undo``, ``dsh.agent.undo``), and the exact reverse of a logged diff.

A successful call's result carries ``meta["undo"]``:

- ``file``: the absolute path the tool wrote (after the workspace resolved it);
- ``created``: the file did not exist before the call (undone by deleting it);
- ``sha256Before``: the SHA-256 of the file's bytes before the call (None when created, or when
  the tool did not read them: ``write_file`` over a binary or very large file);
- ``sha256After``: the SHA-256 of the bytes the tool wrote;
- ``createdDirs``: the parent directories the call created, outermost first.

The pre-image itself is not stored again: the logged diff (``meta["diff"]``, ``dsh.tools.diffs``)
is exact for a text file. It splits lines at ``\\n`` only (a ``\\r`` stays in its line), writes
every line whole with its side's position (``@@ -a,b +c,d @@``) and marks a side's last line
without a newline (``\\ No newline at end of file``); with 3 lines of context the lines between
hunks are the same on both sides. So from the bytes the tool wrote (checked by ``sha256After``)
:func:`reverse_patch` rebuilds the old text line for line, and the result is checked against
``sha256Before`` before anything is written. It is not exact where the log is not: a diff is
logged only while both sides are UTF-8 text within ``MAX_DIFF_CHARS`` characters and
``MAX_DIFF_LINES`` lines, and a secret value in it is masked; such a change is refused, never
approximated.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh.tools.diffs import NO_NEWLINE, split_lines

UNDO_META = "undo"
"""The key of a file tool's result meta that holds its undo record."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def undo_record(
    path: Path,
    *,
    before: bytes | None,
    after: bytes,
    created: bool,
    created_dirs: Sequence[Path] = (),
) -> dict[str, Any]:
    """The ``meta["undo"]`` of a call that left ``after`` at ``path`` (``before``: the bytes it
    replaced, when the tool read them)."""
    return {
        "file": str(path),
        "created": created,
        "sha256Before": None if before is None else sha256_hex(before),
        "sha256After": sha256_hex(after),
        "createdDirs": [str(directory) for directory in created_dirs],
    }


def missing_parents(path: Path) -> list[Path]:
    """The ancestors of ``path`` that do not exist yet, outermost first (what a
    ``mkdir(parents=True)`` will create)."""
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    return missing[::-1]


class PatchMismatch(ValueError):
    """The diff does not fit the text it is reversed on (or is not a diff ``unified_diff``
    writes)."""


_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def reverse_patch(diff: Sequence[str], after: str) -> str:
    """The text ``before`` such that ``unified_diff(path, before, after) == diff``: the logged
    diff taken back. Raises ``PatchMismatch`` when ``diff`` does not apply to ``after``."""
    if not diff:
        return after  # the call changed nothing
    if len(diff) < 3 or not diff[0].startswith("--- ") or not diff[1].startswith("+++ "):
        raise PatchMismatch("not a unified diff")
    lines = split_lines(after)
    out: list[str] = []
    pos = 0
    index = 2
    while index < len(diff):
        header = _HUNK.fullmatch(diff[index])
        if header is None:
            raise PatchMismatch(f"line {index + 1} is not a hunk header")
        old_len = 1 if header[2] is None else int(header[2])
        new_start, new_len = int(header[3]), 1 if header[4] is None else int(header[4])
        start = new_start - 1 if new_len else new_start  # an empty side names the line before
        if start < pos or start + new_len > len(lines):
            raise PatchMismatch(f"hunk {diff[index]!r} is outside the file")
        hunk = diff[index]
        index += 1
        old: list[str] = []
        new: list[str] = []
        while len(old) < old_len or len(new) < new_len:
            if index >= len(diff):
                raise PatchMismatch("the last hunk is cut short")
            tag, body = diff[index][:1], diff[index][1:]
            if tag not in (" ", "-", "+"):
                raise PatchMismatch(f"line {index + 1} is not a hunk line")
            index += 1
            ends_file = index < len(diff) and diff[index] == NO_NEWLINE
            if ends_file:
                index += 1
            line = body if ends_file else body + "\n"
            if tag in (" ", "-"):
                old.append(line)
            if tag in (" ", "+"):
                new.append(line)
        if len(old) != old_len or len(new) != new_len or lines[start : start + new_len] != new:
            raise PatchMismatch(f"hunk {hunk!r} does not match the file")
        out.extend(lines[pos:start])
        out.extend(old)
        pos = start + new_len
    out.extend(lines[pos:])
    return "".join(out)
