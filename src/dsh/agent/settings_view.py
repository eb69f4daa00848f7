"""``dsh sessions show ID --view settings``: a session's recorded settings, one line each."""

from __future__ import annotations

from typing import Any

from dsh.agent.session_settings import COMPACTION_KEYS, SUMMARIZER_ROUTE_KEYS
from dsh.events import NO_ROUTE, SessionSettings

__all__ = ["describe"]

WINDOW_ASKED = {
    True: "yes (its server reported it: asked again on reopen)",
    False: "no (set: kept on reopen)",
}
"""Where the recorded window came from (``dsh.agent.asked_window``); a record made before dsh
said has no such line."""

NO_ROUTE_SHOWN = (
    "none recorded (the import dropped the log's route and summariser): it runs on the "
    "configured ones and records them on its next run"
)
SUMMARIZER_KEYS = SUMMARIZER_ROUTE_KEYS | {"summarizer_context_window"}


def describe(recorded: SessionSettings | None) -> list[str]:
    """One ``key  value`` line per setting, with where the window came from."""
    if recorded is None:
        return [
            "no settings recorded (a log written before dsh recorded them); it runs with the "
            "configured ones and records them on its next run"
        ]
    rows: list[tuple[str, Any]] = [
        ("provider.name", recorded.provider),
        ("provider.model", recorded.model),
        ("provider.base_url", recorded.base_url),
        ("provider.context_window", recorded.context_window),
    ]
    if recorded.provider == NO_ROUTE:
        rows = [("route", NO_ROUTE_SHOWN)]
    if recorded.window_asked is not None and recorded.context_window is not None:
        rows.append(("window_asked", WINDOW_ASKED[recorded.window_asked]))
    rows += [
        (f"compaction.{k}", getattr(recorded.compaction, k))
        for k in COMPACTION_KEYS
        if recorded.provider != NO_ROUTE or k not in SUMMARIZER_KEYS
    ]
    rows.append(("workspace", recorded.workspace))
    if recorded.changed:
        rows.append(("last changed", ", ".join(recorded.changed)))
    width = max(len(key) for key, _ in rows)
    return [f"{key.ljust(width)}  {_show(value)}" for key, value in rows]


def _show(value: Any) -> str:
    return "(none)" if value is None else str(value)
