"""Keeping file tools inside the workspace, and small helpers the file tools share.

Every path a tool receives goes through :func:`resolve_in_workspace`: relative paths are taken
relative to the workspace, then symlinks are followed and ``..`` collapsed, and the result must
lie inside the resolved workspace. A symlink inside the workspace that points outside is refused
like any other escape, for reading and for writing. Refusals name only the path the model gave,
never where it resolved to (a symlink's target, an expanded ``~``, the workspace's location).
How the write tools then write a file whole or not at all is :mod:`dsh.tools.atomic_write`.
"""

from __future__ import annotations

import os
from pathlib import Path

from dsh.errors import ToolError

SNIFF_BYTES = 8192
"""How much of a file's head is checked for NUL bytes to call it binary."""


def resolve_in_workspace(path: str, workspace: Path, *, must_exist: bool = False) -> Path:
    """Resolve ``path`` (relative to ``workspace`` unless absolute) and refuse escapes.

    The returned path is fully resolved: symlinks followed (a path that does not exist yet
    resolves through its existing parents) and ``..`` collapsed. Raises ``ToolError`` with code
    ``OUTSIDE_WORKSPACE`` when the result is not inside the resolved workspace, and with code
    ``NOT_FOUND`` when ``must_exist`` is set and nothing is there.
    """
    if not path or "\x00" in path:
        raise ToolError(f"invalid path {path!r}", code="INVALID_ARGUMENT")
    root = workspace.resolve()
    try:
        given = Path(path).expanduser()
    except RuntimeError as exc:  # ``~name`` for a user that does not exist
        raise ToolError(
            f"cannot expand {path!r}: no such user's home; give a path relative to the "
            "workspace root (./~name for a file named so)",
            code="INVALID_ARGUMENT",
        ) from exc
    candidate = given if given.is_absolute() else root / given
    try:
        resolved = Path(os.path.realpath(candidate))
    except (OSError, RuntimeError) as exc:  # e.g. a symlink loop
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "a symlink loop"
        raise ToolError(f"cannot resolve path {path!r}: {reason}", code="INVALID_ARGUMENT") from exc
    if not is_inside(resolved, root):
        raise ToolError(
            f"path {path!r} is outside the workspace (it, or a symlink on its way, leads out); "
            "file tools only work inside the workspace: give a path relative to its root",
            code="OUTSIDE_WORKSPACE",
        )
    if must_exist and not resolved.exists():
        raise ToolError(f"no such file or directory: {path!r}", code="NOT_FOUND")
    return resolved


def is_inside(path: Path, root: Path) -> bool:
    """True if the (already resolved) ``path`` is ``root`` or below it."""
    return path == root or path.is_relative_to(root)


def display_path(path: Path, workspace: Path) -> str:
    """``path`` relative to the workspace for messages (``.`` for the root itself)."""
    root = workspace.resolve()
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return rel.as_posix() if rel.parts else "."


def is_binary(head: bytes) -> bool:
    """A file whose first bytes contain NUL is treated as binary."""
    return b"\x00" in head[:SNIFF_BYTES]
