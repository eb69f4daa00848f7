"""An ``/undo`` sent while a turn ran: it waits for that turn (queued in the composer) and takes
back that turn's file edits, the turn it was typed about, never an earlier one.

A queued draft is sent only when the turn it waited for ends well (``dsh.tui.app_work``), and
the queue holds one draft, so the ``/undo`` runs right after that turn, before anything else
typed. The turn it means is then the session's last. When that turn changed no file through
``write_file`` / ``edit_file`` (it only read, or changed files through ``bash``, which undo
never takes back), ``/undo`` typed when idle would take back the newest turn that did — an
earlier one, which the person did not type about — so the queued one is refused instead, in
one line naming both turns (``refusal``); ``/undo`` sent again, idle, takes back the earlier
one. A dry run (``--dry-run``) only says what it would do, and is not refused.
"""

from __future__ import annotations

from dsh.agent.undo_scan import scan_log
from dsh.surface import Session


def refusal(session: Session | None) -> str | None:
    """Why a queued ``/undo`` does not run on ``session`` now that the turn it waited for has
    ended (None: it runs — that turn is the newest with file edits, or there is nothing to
    undo, which the undo says itself)."""
    if session is None:
        return None
    scan = scan_log(session.events)
    latest = scan.latest_undoable()
    last = scan.turns[-1] if scan.turns else None
    if last is None or latest is None or latest is last:
        return None
    bash = f" (what its {last.shell_calls} bash call(s) changed is never undone)"
    return (
        f"Not undone: turn {last.turn}, which ran when you typed /undo, changed no file through "
        f"write_file or edit_file{bash if last.shell_calls else ''}. Send /undo again to take "
        f"back turn {latest.turn}'s edits."
    )
