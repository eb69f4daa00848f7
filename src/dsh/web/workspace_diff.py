"""``GET /api/sessions/{id}/diff``: ``/diff`` in the browser, the changes in the session's
recorded workspace since its last commit (``dsh.agent.workspace_diff``: git running no program
a repository's config could name, with no secret in its environment, capped, timed out), as
the terminal UI's ``/diff`` shows them. Git runs in a worker thread: the server answers others
meanwhile.

The answer is ``{note, files, changed, moreLines, truncated, maxBytes, untracked,
untrackedTotal}``:

- ``note``: one line when there is nothing to show (``No changes since the last commit.``),
  or why the changes could not be read (``/diff: … is not in a git work tree: no changes to
  show``, no git, git timed out); null when there are changes.
- ``files``: ``[{path, lines}]``, each file's unified diff lines from its ``--- a/…`` header
  (a binary file: git's ``Binary files … differ``), at most ``SHOWN_LINES`` lines in all, the
  last file shown cut short and the files after it left out; ``changed`` counts every changed
  file, ``moreLines`` the lines left out.
- ``truncated``: git's diff was longer than ``maxBytes`` (``MAX_DIFF_BYTES``) and was cut
  there.
- ``untracked``: the untracked files git does not ignore, the first ``UNTRACKED_SHOWN``;
  ``untrackedTotal`` counts them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio.to_thread

from dsh.agent.workspace_diff import (
    MAX_DIFF_BYTES,
    NO_CHANGES,
    UNTRACKED_SHOWN,
    WorkspaceDiffError,
    within_lines,
    workspace_diff,
)
from dsh.errors import printable_line


async def workspace_changes(workspace: Path) -> dict[str, Any]:
    """The diff route's answer for ``workspace`` (the module docstring)."""
    try:
        diff = await anyio.to_thread.run_sync(workspace_diff, workspace)
    except WorkspaceDiffError as exc:
        return _nothing(printable_line(f"/diff: {exc}"))
    if diff.empty:
        return _nothing(NO_CHANGES)
    files, hidden = within_lines(diff)
    return {
        "note": None,
        "files": [{"path": change.path, "lines": list(change.lines)} for change in files],
        "changed": len(diff.files),
        "moreLines": hidden,
        "truncated": diff.truncated,
        "maxBytes": MAX_DIFF_BYTES,
        "untracked": list(diff.untracked[:UNTRACKED_SHOWN]),
        "untrackedTotal": len(diff.untracked),
    }


def _nothing(note: str) -> dict[str, Any]:
    return {
        "note": note,
        "files": [],
        "changed": 0,
        "moreLines": 0,
        "truncated": False,
        "maxBytes": MAX_DIFF_BYTES,
        "untracked": [],
        "untrackedTotal": 0,
    }
