""" "waiting for the model (N s)": what the faces show while a model call has produced nothing.

A long prompt on a local server can take tens of seconds of prefill before the first token; the
agent records when such a wait started (``Agent.waiting_since``, event-loop time) and the TUI
status bar and ``dsh run`` poll this function. It says nothing for the first second, so an
instant reply (a keyless provider, a snapshot test) never shows it.
"""

from __future__ import annotations

NOTICE_AFTER = 1.0
"""Seconds of silence before the notice appears."""

POLL_EVERY = 0.25
"""How often the faces look again (seconds)."""


def waiting_notice(since: float | None, now: float) -> str | None:
    """The notice for a wait that started at ``since`` (None: not waiting), or None."""
    if since is None or now - since < NOTICE_AFTER:
        return None
    return f"waiting for the model ({int(now - since)} s)"
