"""An imported log's recorded route is dropped: only the user's config chooses where a key goes.

A ``session/settings`` event records the route a session runs on — its provider, model, server
(``baseUrl``) and window, and its summariser's model, provider, server and window — and a reopen
runs on that route ahead of the config (``dsh.agent.session_settings``). A log from elsewhere is
untrusted data, as an untrusted project config is (docs/usage.md, "Project trust"): were its
route kept, continuing the session would send the user's key for the provider it names (the
variable ``provider.api_key_env`` names, ``[provider.headers]`` too) to whatever server it names.

So ``dsh sessions import`` keeps each settings event's compaction backend and budgets and
drops the rest: ``provider`` and ``model`` become ``NO_ROUTE``, the server, window and
summariser are unset, and the session runs on the configured route and summariser, as a log that
recorded none does; its first run records them. The report says what was dropped, in one line.
The recorded workspace becomes the one the import chose (``dsh.interop.importer``): a log from
elsewhere does not choose the directory its tools run in either.
"""

from __future__ import annotations

import msgspec

from dsh.config import redact
from dsh.errors import printable_line
from dsh.events import NO_ROUTE, Event, SessionSettings, SessionSettingsEvent

__all__ = ["drop_routes"]

WHY = (
    "a log from elsewhere may not choose where your API key is sent; the session will use "
    "your configured provider, model, server and summariser"
)


def drop_routes(events: list[Event], workspace: str) -> tuple[list[Event], str | None]:
    """``events`` with the route of every ``session/settings`` event dropped and its workspace
    made ``workspace``, and the report's line saying what was dropped and why (None: the log
    records no settings)."""
    dropped: dict[str, None] = {}  # what the records named, in order, each once
    out: list[Event] = []
    for event in events:
        if isinstance(event, SessionSettingsEvent):
            dropped.update(dict.fromkeys(_named(event.data)))
            event = msgspec.structs.replace(event, data=_without_route(event.data, workspace))
        out.append(event)
    if not any(isinstance(event, SessionSettingsEvent) for event in events):
        return out, None
    named = ", ".join(dropped) if dropped else "none named"
    return out, printable_line(f"dropped the route the log recorded ({named}): {WHY}")


def _without_route(recorded: SessionSettings, workspace: str) -> SessionSettings:
    compaction = msgspec.structs.replace(
        recorded.compaction,
        summarizer=NO_ROUTE,
        summarizer_provider=None,
        summarizer_base_url=None,
        summarizer_context_window=None,
    )
    return msgspec.structs.replace(
        recorded,
        provider=NO_ROUTE,
        model=NO_ROUTE,
        base_url=None,
        context_window=None,
        window_asked=None,
        changed=(),
        compaction=compaction,
        workspace=workspace,
    )


def _named(recorded: SessionSettings) -> list[str]:
    """What a record names that can receive a key (or choose whose is sent), as the report
    says it."""
    names = []
    if recorded.provider != NO_ROUTE:
        names += [f"provider {recorded.provider}", f"model {recorded.model}"]
    if recorded.base_url is not None:
        names.append(f"server {redact(recorded.base_url)}")
    summarizer = recorded.compaction
    if summarizer.summarizer not in (NO_ROUTE, "extractive"):
        names.append(f"summariser {summarizer.summarizer}")
    if summarizer.summarizer_provider is not None:
        names.append(f"summariser provider {summarizer.summarizer_provider}")
    if summarizer.summarizer_base_url is not None:
        names.append(f"summariser server {redact(summarizer.summarizer_base_url)}")
    return names
