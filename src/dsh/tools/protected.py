"""Protected paths: where a write by the model's file tools would let it run commands later.

- a ``.dsh`` directory anywhere in the workspace: dsh's own configuration (a trusted
  project's ``config.toml`` may loosen approval and start MCP servers; ``commands/`` holds the
  project's prompt commands);
- a ``.git`` directory (or a worktree's ``.git`` file) anywhere in the workspace: its hooks
  and config run commands on the user's next git operation;
- dsh's home (``$DSH_HOME``), when it lies inside the workspace: the user config, whose
  ``[trust]`` and ``tools.approval`` are the user's alone.

Permission to write files must not become permission to run commands, so a write there is
never covered by an "always" answer, ``--allow write``, nor approval mode ``auto``/``--yes``:
it is asked every time, and refused where there is no one to ask
(:class:`~dsh.tools.approval.ApprovalPolicy`).

The path is resolved as the file tools resolve it (:func:`~dsh.tools.workspace.
resolve_in_workspace`: ``~`` expanded, relative to the workspace, symlinks followed, ``..``
collapsed), so ``.dsh/../.dsh/config.toml`` and a symlink to it are caught too. Names are
compared case-insensitively, without the invisible characters HFS+ ignores in a name, so
``.DSH`` or ``.g\u200cit`` on a Mac's case-insensitive disk is caught as well. A path the tools
would refuse anyway (outside the workspace, unresolvable) is not protected here: the tool's own
refusal answers that call. A ``write`` tool names the file it writes in its ``path`` argument
(both built-in ones do).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.config import dsh_home
from dsh.errors import ConfigError, ToolError
from dsh.tools.base import Tool
from dsh.tools.workspace import display_path, is_inside, resolve_in_workspace

PROTECTED_NAMES: dict[str, str] = {".dsh": "dsh", ".git": "git"}
"""A directory (or file) of this name, anywhere in the workspace → whose configuration it is."""

_IGNORED_BY_HFS = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points HFS+ leaves out when it compares names (``.g\u200cit`` is ``.git`` there)."""


@dataclass(frozen=True, slots=True)
class ProtectedWrite:
    """A write the model may never make unasked."""

    path: str
    """The file, as the workspace shows it (``.dsh/config.toml``)."""
    owner: str
    """Whose configuration it is: ``dsh`` or ``git``."""

    @property
    def why(self) -> str:
        """The sentence the approval prompt and a denial give."""
        return (
            f"writing {self.path} changes {self.owner}'s own configuration, which can run commands"
        )


def protected_write(tool: Tool, args: dict[str, Any], workspace: Path) -> ProtectedWrite | None:
    """The protected file a call of ``tool`` with ``args`` would write, or None (not a
    ``write`` tool, no ``path``, a path the tool refuses anyway, or an ordinary file)."""
    if tool.kind != "write":
        return None
    path = args.get("path")
    if not isinstance(path, str):
        return None
    try:
        resolved = resolve_in_workspace(path, workspace)
    except ToolError:
        return None
    root = workspace.resolve()
    shown = display_path(resolved, root)
    for name in resolved.relative_to(root).parts:
        owner = PROTECTED_NAMES.get(_compared(name))
        if owner is not None:
            return ProtectedWrite(shown, owner)
    home = _resolved_home()
    if home is not None and is_inside(home, root) and is_inside(resolved, home):
        return ProtectedWrite(shown, "dsh")
    return None


def _compared(name: str) -> str:
    """A name as a case-insensitive disk that ignores some invisible characters compares it."""
    return _IGNORED_BY_HFS.sub("", name).casefold()


def _resolved_home() -> Path | None:
    try:
        return dsh_home().resolve()
    except (ConfigError, OSError, RuntimeError):  # a broken DSH_HOME is reported where it is used
        return None
