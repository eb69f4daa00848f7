"""File tools: ``read_file``, ``write_file``, ``edit_file``, ``list_dir`` (and, re-exported from
:mod:`dsh.tools.search`, ``glob`` and ``grep``).

Every path goes through :func:`~dsh.tools.workspace.resolve_in_workspace`. ``write_file`` and
``edit_file`` write through :func:`~dsh.tools.atomic_write.write_regular_file`: a crash leaves a
file's old bytes or its new ones, never a mix; a file with other hard links is parted from them
(they keep the old bytes) and the result says so. Blocking file I/O runs in a worker thread.
Expected failures raise ``ToolError``, which the registry turns into an error tool result the
model can act on.
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO, TypeVar

from dsh.config.small_file import UnreadableFile, open_regular_file
from dsh.errors import ToolError
from dsh.tools.args import INVALID_ARGUMENT, int_arg, str_arg
from dsh.tools.atomic_write import sync_directories, write_regular_file
from dsh.tools.base import ToolContext, ToolKind, ToolOutput
from dsh.tools.diffs import DIFF_META, read_small_text, unified_diff
from dsh.tools.search import GlobTool, GrepTool
from dsh.tools.secrets import SecretPolicy
from dsh.tools.undo_record import UNDO_META, missing_parents, undo_record
from dsh.tools.workspace import SNIFF_BYTES, display_path, is_binary, resolve_in_workspace

__all__ = ["EditFileTool", "GlobTool", "GrepTool", "ListDirTool", "ReadFileTool", "WriteFileTool"]

DEFAULT_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_READ_CHARS = 100_000
MAX_DIR_ENTRIES = 1000

_T = TypeVar("_T")


async def _in_thread(fn: Callable[..., _T], *args: Any) -> _T:
    """Run blocking file work in a thread, turning OS errors into tool errors."""
    try:
        return await asyncio.to_thread(fn, *args)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        raise ToolError(f"I/O error{where}: {exc.strerror or exc}", code="IO_ERROR") from exc


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_PATH_DOC = "File path, relative to the workspace root (absolute paths must be inside it)."


def open_text_file(path: Path, shown: str) -> BinaryIO:
    """``path`` opened for reading, at its start, when it is a regular text file; ``ToolError``
    when it is a directory, not a regular file (a FIFO swapped in after a look is caught on the
    descriptor, and never blocks the open), or binary."""
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; use list_dir to see it", code="IS_DIRECTORY")
    try:
        fh = open_regular_file(path)
    except UnreadableFile as exc:
        raise ToolError(f"{shown} is not a regular file", code="NOT_A_FILE") from exc
    try:
        if is_binary(fh.read(SNIFF_BYTES)):
            raise ToolError(
                f"{shown} looks like a binary file ({os.fstat(fh.fileno()).st_size} bytes); "
                "only text files can be read or edited",
                code="BINARY_FILE",
            )
        fh.seek(0)
    except BaseException:
        fh.close()
        raise
    return fh


def _check_regular_file(path: Path, shown: str) -> None:
    """``open_text_file``'s checks alone."""
    open_text_file(path, shown).close()


def read_edit_source(path: Path, shown: str) -> bytes:
    """The bytes of the file an edit changes (``open_text_file``'s checks)."""
    with open_text_file(path, shown) as fh:
        return fh.read()


class ReadFileTool:
    """Show a text file with 1-based line numbers, a window of ``limit`` lines at a time."""

    name: str = "read_file"
    kind: ToolKind = "read"
    description: str = (
        "Read a text file from the workspace. Lines are shown as '<number>\\t<text>' (1-based). "
        f"At most {DEFAULT_READ_LIMIT} lines are returned per call; use offset (first line "
        "number) and limit to read other parts of long files."
    )

    def __init__(self, secrets: SecretPolicy | None = None) -> None:
        self.secrets = secrets or SecretPolicy()
        """A long line is never cut inside one of its values (the registry masks them)."""
        self.parameters: dict[str, Any] = _object(
            {
                "path": _string(_PATH_DOC),
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Line number to start at (1-based). Default 1.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": f"Maximum number of lines. Default {DEFAULT_READ_LIMIT}.",
                },
            },
            ["path"],
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Read ``args.path`` from ``offset`` for ``limit`` lines."""
        path = str_arg(args, "path")
        offset = int_arg(args, "offset", 1, minimum=1)
        limit = int_arg(args, "limit", DEFAULT_READ_LIMIT, minimum=1)
        text = await _in_thread(read_window, path, ctx.workspace, offset, limit, self.secrets)
        return ToolOutput(text)


def read_window(
    path: str,
    workspace: Path,
    offset: int,
    limit: int,
    secrets: SecretPolicy,
    *,
    max_chars: int = MAX_READ_CHARS,
) -> str:
    """What ``read_file`` shows of ``path``: lines ``offset``… (at most ``limit``, and no line
    started once ``max_chars`` characters are shown), numbered, with a closing line naming the
    range when that is not the whole file. Raises ``ToolError`` as the tool answers."""
    resolved = resolve_in_workspace(path, workspace, must_exist=True)
    shown = display_path(resolved, workspace)
    lines: list[str] = []
    chars = 0
    total = 0
    last = offset - 1
    keep = MAX_LINE_CHARS + secrets.longest
    raw = open_text_file(resolved, shown)
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as fh:  # \n, \r\n, \r end lines
        for number, (line, length) in enumerate(_bounded_lines(fh, keep), 1):
            total = number
            if number < offset or number >= offset + limit or chars > max_chars:
                continue
            if length > MAX_LINE_CHARS:
                cut = secrets.safe_cut(line, MAX_LINE_CHARS)
                line = f"{line[:cut]}… [{length - cut} characters omitted]"
            lines.append(f"{number}\t{line}")
            chars += len(line) + 1
            last = number
    if total == 0:
        return f"({shown} is empty)"
    if offset > total:
        raise ToolError(
            f"offset {offset} is past the end of {shown}, which has {total} lines",
            code=INVALID_ARGUMENT,
        )
    body = "\n".join(lines)
    if last < total:
        return (
            f"{body}\n(lines {offset}–{last} of {total}; "
            f"call read_file with offset={last + 1} to read more)"
        )
    if offset > 1:
        return f"{body}\n(lines {offset}–{last} of {total})"
    return body


def _bounded_lines(fh: TextIO, keep: int) -> Iterator[tuple[str, int]]:
    """Each line of ``fh`` (opened with universal newlines) without its line break, cut to
    its first ``keep`` characters, and its full length: a file of one huge line is never held
    in memory whole."""
    while part := fh.readline(keep + 1):
        if part.endswith("\n") or len(part) <= keep:  # the whole line
            line = part.removesuffix("\n")
            yield line, len(line)
            continue
        length = len(part)
        while more := fh.readline(_SKIP_CHUNK):
            if more.endswith("\n"):
                length += len(more) - 1
                break
            length += len(more)
        yield part[:keep], length


_SKIP_CHUNK = 1 << 16


class WriteFileTool:
    """Create or overwrite a file with the given content, creating parent directories."""

    name: str = "write_file"
    kind: ToolKind = "write"
    description: str = (
        "Write a file in the workspace, replacing it if it exists. Parent directories are "
        "created. Prefer edit_file for changing part of an existing file."
    )

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = _object(
            {"path": _string(_PATH_DOC), "content": _string("The complete new file content.")},
            ["path", "content"],
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Write ``args.content`` (UTF-8) to ``args.path``."""
        path = str_arg(args, "path")
        content = str_arg(args, "content")
        text, meta = await _in_thread(_write, path, content, ctx.workspace)
        return ToolOutput(text, meta=meta)


def write_target(path: str, workspace: Path) -> tuple[Path, str]:
    """The file a write of ``path`` makes or replaces, resolved, and its name as messages show
    it; ``ToolError`` when it cannot be one (outside the workspace, a directory)."""
    resolved = resolve_in_workspace(path, workspace)
    shown = display_path(resolved, workspace)
    if resolved.is_dir():
        raise ToolError(f"{shown} is a directory; give a file path", code="IS_DIRECTORY")
    return resolved, shown


def _write(path: str, content: str, workspace: Path) -> tuple[str, dict[str, Any]]:
    """The result's text and its meta: the undo record (``dsh.tools.undo_record``) and, over
    an existing text file, the diff of the change (for people: an overwrite is not all new
    lines)."""
    resolved, shown = write_target(path, workspace)
    existed = resolved.exists()
    before = read_small_text(resolved) if existed else None
    created_dirs = missing_parents(resolved)
    resolved.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8")
    kept_old = write_regular_file(resolved, data, shown, within=workspace.resolve())
    sync_directories(created_dirs)
    what = "overwrote" if existed else "created"
    before_bytes = None if before is None else before.encode("utf-8")  # decoded strictly: exact
    diff = None if before is None else unified_diff(shown, before, content)
    record = undo_record(
        resolved, before=before_bytes, after=data, created=not existed, created_dirs=created_dirs
    )
    answer = f"wrote {len(data)} bytes to {shown} ({what}){_parted_links(kept_old)}"
    return answer, _change_meta(diff, record)


class EditFileTool:
    """Replace one exact, unique occurrence of ``old`` with ``new`` in a text file."""

    name: str = "edit_file"
    kind: ToolKind = "write"
    description: str = (
        "Edit a text file by exact string replacement: 'old' must occur exactly once in the "
        "file (include surrounding lines to make it unique) and is replaced by 'new'. "
        "Whitespace and indentation must match exactly."
    )

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = _object(
            {
                "path": _string(_PATH_DOC),
                "old": _string("The exact text to replace; must occur exactly once."),
                "new": _string("The replacement text."),
            },
            ["path", "old", "new"],
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Replace ``args.old`` by ``args.new`` in ``args.path``."""
        path, old, new = str_arg(args, "path"), str_arg(args, "old"), str_arg(args, "new")
        check_edit_arguments(old, new)
        text, meta = await _in_thread(_edit, path, old, new, ctx.workspace)
        return ToolOutput(text, meta=meta)


def check_edit_arguments(old: str, new: str) -> None:
    """Refuse an edit that names no change (``ToolError``): an empty ``old``, or ``new`` the
    same as ``old``."""
    if not old:
        raise ToolError(
            "old must not be empty; use write_file to create or overwrite a whole file",
            code=INVALID_ARGUMENT,
        )
    if old == new:
        raise ToolError("old and new are identical; nothing to change", code=INVALID_ARGUMENT)


def edit_target(path: str, workspace: Path) -> tuple[Path, str]:
    """The file an edit of ``path`` changes, resolved, and its name as messages show it;
    ``ToolError`` when there is none to edit (outside the workspace, missing, a directory,
    not a regular file, binary)."""
    resolved = resolve_in_workspace(path, workspace, must_exist=True)
    shown = display_path(resolved, workspace)
    _check_regular_file(resolved, shown)
    return resolved, shown


def edit_text(raw: bytes, shown: str) -> str:
    """A file's bytes as the text an edit changes; ``ToolError`` when they are not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{shown} is not valid UTF-8 text: {exc}", code="BINARY_FILE") from exc


def occurrence(text: str, old: str, shown: str) -> int:
    """Where the one occurrence of ``old`` in ``text`` starts; ``ToolError`` when there is
    none, or more than one."""
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old text not found in {shown}; read the file and copy the text exactly "
            "(including whitespace)",
            code="NOT_FOUND",
        )
    if count > 1:
        raise ToolError(
            f"old text found {count} times in {shown} — give more context so it is unique",
            code="NOT_UNIQUE",
        )
    return text.index(old)


def _edit(path: str, old: str, new: str, workspace: Path) -> tuple[str, dict[str, Any]]:
    """The result's text and its meta: the unified diff of the file's change (for people; none
    for a file too large to diff) and the undo record (``dsh.tools.undo_record``)."""
    resolved, shown = edit_target(path, workspace)
    raw = read_edit_source(resolved, shown)
    text = edit_text(raw, shown)
    index = occurrence(text, old, shown)
    edited = text.replace(old, new, 1)
    data = edited.encode("utf-8")
    kept_old = write_regular_file(resolved, data, shown, within=workspace.resolve())
    first = text.count("\n", 0, index) + 1
    last = first + new.count("\n")
    where = f"line {first}" if first == last else f"lines {first}–{last}"
    diff = unified_diff(shown, text, edited)
    record = undo_record(resolved, before=raw, after=data, created=False)
    answer = f"edited {shown}: replaced 1 occurrence ({where}){_parted_links(kept_old)}"
    return answer, _change_meta(diff, record)


def _parted_links(kept_old: int) -> str:
    """What a result adds when the file had other hard links: they keep the old bytes."""
    if not kept_old:
        return ""
    links = (
        "1 other hard link, which keeps"
        if kept_old == 1
        else f"{kept_old} other hard links, which keep"
    )
    return f"; it had {links} the old content"


def _change_meta(diff: list[str] | None, record: dict[str, Any]) -> dict[str, Any]:
    """A file change's result meta: its diff (when there is one) and its undo record."""
    return {**({} if diff is None else {DIFF_META: diff}), UNDO_META: record}


class ListDirTool:
    """List a directory's entries, sorted, directories marked with a trailing ``/``."""

    name: str = "list_dir"
    kind: ToolKind = "read"
    description: str = (
        "List the entries of a directory in the workspace (default: the workspace root), "
        "sorted by name; directories end with '/'."
    )

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = _object(
            {"path": _string("Directory, relative to the workspace root. Default '.'.")}, []
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """List ``args.path`` (default the workspace root)."""
        path = str_arg(args, "path", ".")
        return ToolOutput(await _in_thread(list_dir, path, ctx.workspace))


def list_dir(path: str, workspace: Path) -> str:
    """What ``list_dir`` shows of the directory ``path``: its sorted entries (a directory's with
    a trailing ``/``), at most ``MAX_DIR_ENTRIES``."""
    resolved = resolve_in_workspace(path, workspace, must_exist=True)
    shown = display_path(resolved, workspace)
    if not resolved.is_dir():
        raise ToolError(f"{shown} is not a directory; use read_file", code="NOT_A_DIRECTORY")
    names: list[str] = []
    with os.scandir(resolved) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            names.append(entry.name + "/" if is_dir else entry.name)
    if not names:
        return f"({shown} is empty)"
    names.sort()
    if len(names) > MAX_DIR_ENTRIES:
        note = f"(showing the first {MAX_DIR_ENTRIES} of {len(names)} entries; use glob to narrow)"
        return "\n".join([*names[:MAX_DIR_ENTRIES], note])
    return "\n".join(names)
