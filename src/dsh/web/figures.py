"""What the session info says of a session besides its state: its title and its figures
(context use against its window, cache hits, tokens, calls, turns, compactions), for the page's
header; the same for a session open here and one read from the store."""

from __future__ import annotations

from typing import Any

from dsh.agent import session_settings
from dsh.agent.runtime import Route
from dsh.agent.title_command import current_title
from dsh.agent.wiring import session_window
from dsh.config import window_too_small
from dsh.events import RequestContextEvent
from dsh.surface import Session
from dsh.transcript.stats import SessionStats
from dsh.web.titles import SIDEBAR_TITLE_CHARS


def session_figures(
    session: Session, stats: SessionStats, default_window: int, upcoming: Route | None = None
) -> dict[str, Any]:
    """The info's ``stats``: ``stats`` (the session's ``ContextFold``'s) with its context use
    against the window its next turn runs in: ``upcoming``'s, the route of its next turn here
    when it is known (``dsh.web.next_route``: ``/model``'s choice, else its recorded settings
    under this server's flags and config), else the one it recorded, else ``default_window``."""
    window = session_window(upcoming) if upcoming else logged_window(session) or default_window
    tokens = session.measure().total_tokens
    shown = {"contextTokens": tokens, "contextWindow": window, "contextRatio": None}
    return against_window({**shown, **_stats_figures(stats)}, window)


def against_window(figures: dict[str, Any], window: int) -> dict[str, Any]:
    """``figures`` with their context use measured against ``window``."""
    tokens = figures["contextTokens"]
    return {**figures, "contextWindow": window, "contextRatio": tokens / window if window else None}


def _stats_figures(stats: SessionStats) -> dict[str, Any]:
    return {
        "cacheHitRatio": stats.cache_hit_ratio,
        "inputTokens": stats.input_tokens,
        "cacheReadTokens": stats.cache_read_tokens,
        "outputTokens": stats.output_tokens,
        "modelCalls": stats.model_calls,
        "turns": stats.turns,
        "compactions": stats.compactions,
        "events": stats.events,
    }


def logged_window(session: Session) -> int | None:
    """The window the session recorded, else the one it last ran with; one no longer valid is
    not the session's (its reopen replaces it by the configured one, and says so)."""
    recorded = session_settings.latest(session)
    if recorded is not None and recorded.context_window is not None:
        window: int | None = recorded.context_window
    else:
        contexts = session.of_type(RequestContextEvent)
        window = contexts[-1].data.context_window if contexts else None
    return None if window_too_small(window) else window


def title_of(session: Session) -> str | None:
    """The session's title (``dsh.transcript.titles``: the latest ``/title``, else the first
    prompt, shortened); only the two kinds of event that can name it are read."""
    return current_title(session, SIDEBAR_TITLE_CHARS)
