"""A session's title, for every face's session list and header."""

from __future__ import annotations

from collections.abc import Iterable

from dsh.events import Event, TextBlock, UserMessageEvent, UserSource

TITLE_CHARS = 80


def session_title(events: Iterable[Event]) -> str | None:
    """The first prompt a person typed, on one line, at most ``TITLE_CHARS`` long (None before
    the first prompt). Reads only as far as that prompt, so a lazy reader of the log stops
    early. (A ``/title`` event, once the log has one, belongs here: the latest one wins.)"""
    for event in events:
        if (
            isinstance(event, UserMessageEvent)
            and event.surface_op == "append"
            and isinstance(event.data.source, UserSource)
        ):
            text = " ".join(
                "".join(b.text for b in event.data.content if isinstance(b, TextBlock)).split()
            )
            return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"
    return None
