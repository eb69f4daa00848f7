"""``dsh sessions show ID --view settings``: a session's recorded settings, one line each."""

from __future__ import annotations

from typing import Any

from dsh.agent.session_settings import COMPACTION_KEYS, SUMMARIZER_ROUTE_KEYS
from dsh.config import redact
from dsh.events import NO_ROUTE, SessionSettings
from dsh.llm.registry import known_window

__all__ = ["describe"]

WINDOW_ASKED = {
    (True, True): "yes (its server reported it: asked again on reopen)",
    (True, False): (
        "yes (its server reported none: the {window:,} tokens dsh assumes; asked again on reopen)"
    ),
    (True, None): "yes (asked of its server: asked again on reopen)",
    (False, None): "no (set: kept on reopen)",
}
"""Where the recorded window came from (``dsh.agent.asked_window``), by ``window_asked`` and
``window_reported``; a record made before dsh said has no such line, one made before it said
whether the server reported it the third."""
KNOWN = "no (its provider's known window, or set: kept on reopen)"

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
        ("provider.base_url", redact(recorded.base_url)),
        ("provider.context_window", recorded.context_window),
    ]
    if recorded.provider == NO_ROUTE:
        rows = [("route", NO_ROUTE_SHOWN)]
    if recorded.window_asked is not None and recorded.context_window is not None:
        rows.append(("window_asked", _window_asked(recorded, recorded.context_window)))
    rows += [
        (f"compaction.{k}", redact(getattr(recorded.compaction, k)))
        for k in COMPACTION_KEYS
        if recorded.provider != NO_ROUTE or k not in SUMMARIZER_KEYS
    ]
    rows.append(("workspace", recorded.workspace))
    if recorded.changed:
        rows.append(("last changed", ", ".join(recorded.changed)))
    width = max(len(key) for key, _ in rows)
    return [f"{key.ljust(width)}  {_show(value)}" for key, value in rows]


def _window_asked(recorded: SessionSettings, window: int) -> str:
    """Where ``recorded``'s window came from, as its record says it."""
    known = known_window(recorded.provider, recorded.model)
    if not recorded.window_asked and known is not None and known == window:
        return KNOWN
    reported = recorded.window_reported if recorded.window_asked else None
    return WINDOW_ASKED[(recorded.window_asked is True, reported)].format(window=window)


def _show(value: Any) -> str:
    return "(none)" if value is None else str(value)
