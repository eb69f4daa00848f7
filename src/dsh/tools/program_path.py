"""The programs dsh starts by name, found on ``PATH`` without its empty and relative entries.

To ``execvp`` (and so to ``subprocess``, a shell and ``shutil.which``) an empty ``PATH`` entry
— ``PATH=:/usr/bin``, a trailing ``:``, ``::`` — means the current directory, as ``.`` and any
relative entry (``bin``, ``node_modules/.bin``) mean a directory below it. dsh runs in a
repository it has not been told to trust, so looked up that way a program it starts on its own
(the ``bash`` whose version the system prompt states, git for ``/diff`` and the protected-write
checks, the bash tool's shell, an MCP server's command, the editor of ctrl+g) could be the
repository's ``./bash`` or ``./git``, run before anything was approved. Here only the absolute
entries count (one written ``~/bin``, which bash expands and ``execvp`` does not, expanded):

- :func:`find_program` finds a program by name (an absolute path, or None);
- :func:`clean_path` is a ``PATH`` value with only those entries, the one every process dsh
  starts is given (``dsh.tools.secrets``' scrubbed environment): what it runs by name is found
  the same way (``PATH=.:$PATH`` written in a command still works: it is the command's own);
- :func:`absolute_entries` is the rule itself, for text or bytes (the keeper, which resolves a
  call's program on the call's own ``PATH``, works in bytes).

Standard library only and importing little: the keeper program imports this module.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import AnyStr


def absolute_entries(path: AnyStr) -> list[AnyStr]:
    """The absolute directories of the ``PATH`` value ``path``, in order (empty and relative
    entries, which name the current directory or one below it, left out; one written with a
    leading ``~``, which bash expands where ``execvp`` does not, expanded)."""
    separator = os.pathsep if isinstance(path, str) else os.fsencode(os.pathsep)
    tilde = "~" if isinstance(path, str) else b"~"
    entries = (
        os.path.expanduser(entry) if entry.startswith(tilde) else entry
        for entry in path.split(separator)
    )
    return [entry for entry in entries if os.path.isabs(entry)]


def clean_path(path: str | None) -> str:
    """``path`` (a ``PATH`` value; None: unset) with only its absolute entries; the system's
    default (``os.defpath``'s absolute entries) when it has none, since an empty ``PATH`` is
    the current directory again to some ``execvp``."""
    kept = absolute_entries(path) if path is not None else []
    return os.pathsep.join(kept or absolute_entries(os.defpath))


def find_program(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The absolute path of the executable file ``name`` in the absolute entries of
    ``environ``'s ``PATH`` (default ``os.environ``; unset: ``os.defpath``), or None (one
    without any finds nothing). A ``name``
    with a ``/`` in it is a path already, returned as it is."""
    if os.sep in name:
        return name
    env = os.environ if environ is None else environ
    for directory in absolute_entries(env.get("PATH", os.defpath)):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
