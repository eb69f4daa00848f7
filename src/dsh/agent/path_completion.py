"""What a partial ``@path`` may name, for every face: the entries of a session's workspace it
completes to. The terminal UI's composer completes ``@…`` on Tab with these
(``dsh.tui.prompt.complete_path``); the web page asks ``GET /api/sessions/{id}/paths``.

A partial ``some/pa`` (what follows the ``@``) names the entries of the workspace folder
``some`` whose names begin with ``pa``. Each candidate is the partial's folder part as typed,
then the entry's name; a directory's ends in ``/``, so completing goes on into it. A hidden
entry (its name starts with ``.``) is a candidate only when the typed name part begins with a
dot. The folder part is resolved (``..`` folded, symlinks followed) and must lie in the resolved
workspace: a partial that leaves it (``../``, an absolute path elsewhere, a symlink leading out)
has no candidates, and nothing outside the workspace is ever listed. A folder that does not
exist or cannot be read has none either.

A candidate goes into the prompt as the mention that names it (``dsh.agent.mentions``):
``@name``, or ``@"name"`` when the name holds white space or a quote (``mention``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def path_candidates(partial: str, workspace: Path) -> tuple[str, ...]:
    """The workspace entries ``partial`` may name, sorted (directories end in ``/``); empty
    when there are none or the partial leaves the workspace."""
    folder, _, stem = partial.rpartition("/")
    try:
        base = (workspace / folder).resolve()
        root = workspace.resolve()
        if not base.is_relative_to(root) or not base.is_dir():
            return ()
        entries = list(os.scandir(base))
    except (OSError, ValueError, RuntimeError):  # unreadable, a NUL, a symlink loop (3.11)
        return ()
    found: list[str] = []
    for entry in entries:
        if not entry.name.startswith(stem) or (entry.name.startswith(".") and not stem):
            continue
        name = f"{folder}/{entry.name}" if folder else entry.name
        found.append(f"{name}/" if _is_dir(entry) else name)
    return tuple(sorted(found))


def needs_quotes(name: str) -> bool:
    """A mention of ``name`` must quote it: it holds white space (where an unquoted mention
    ends) or a quote."""
    return any(c.isspace() or c == '"' for c in name)


def mention(name: str, *, quoted: bool = False) -> str:
    """The ``@`` mention of the candidate ``name``: ``@name``, or quoted (``quoted``: the typed
    mention is, or ``needs_quotes``), ``@"name"``; a quoted directory is left open,
    ``@"my dir/``, so completing goes on inside it."""
    if not quoted and not needs_quotes(name):
        return f"@{name}"
    return f'@"{name}' if name.endswith("/") else f'@"{name}"'


def common_prefix(candidates: Sequence[str]) -> str:
    """The longest text every candidate begins with (characters, not path parts)."""
    return os.path.commonprefix(list(candidates))  # noqa: RUF071 (characters meant)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
