"""Where a resumed session's tools run, said when that is not where ``dsh`` was started.

A resumed session runs its tools in its own recorded workspace, or in ``--cwd``'s
(``dsh.cli.context.session_workspace``), which may be another directory than the one ``dsh``
was started in. The UI says so once as the session opens (a note naming both) and keeps it in
the status bar (``workspace ~/proj``), so nobody runs ``!ls`` or asks for an edit believing it
lands in the directory their shell is in. Where the two agree nothing is said.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dsh.errors import printable_line

if TYPE_CHECKING:
    from dsh.tui.controller import TuiOptions


def short_path(path: Path, home: Path | None = None) -> str:
    """``path`` as people read it: under the home directory as ``~/…``, printable."""
    home = Path.home() if home is None else home
    try:
        inside = path.relative_to(home)
    except ValueError:
        return printable_line(str(path))
    return printable_line("~" if inside == Path() else f"~/{inside}")


def workspace_note(options: TuiOptions) -> str | None:
    """The opening note: where tools run, why there (``--cwd``, else the session's own
    recorded workspace), and the directory ``dsh`` was started in (None: they run there)."""
    if options.started_in is None:
        return None
    why = "--cwd" if options.workspace_from_flag else "this session's recorded workspace"
    return (
        f"Tools run in {short_path(options.workspace)} ({why}), not in "
        f"{short_path(options.started_in)} where dsh was started."
    )


def workspace_shown(options: TuiOptions) -> str | None:
    """The workspace as the status bar names it, when tools run elsewhere than where ``dsh``
    was started (None: nothing to say)."""
    return None if options.started_in is None else short_path(options.workspace)
