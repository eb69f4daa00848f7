"""A session's own settings: what it was run with, recorded in its log, read back on reopen.

The settings that define a session — its route (provider, model, base URL; never a key), its
context window, its compaction backend, budgets and summariser, and its workspace — are logged as
one ``session/settings`` event when first chosen and again whenever a flag changes one (latest
wins). Every face runs this layer before it builds anything::

    recorded = read(store, session_id)               # None: a new session, or an older log
    resolved = effective(settings, recorded, flags)  # the recorded values win over the config
    route = resolve_route(resolved.settings, ...)
    ...open the session for writing...
    record(session, snapshot(resolved.settings, route_name, model, window, workspace))

A flag given on reopen overrides the recorded value explicitly (``resolved.changes``) and the
next ``record`` logs the change; the config file never re-routes a recorded session. A log
without the event (written before it existed) gets the configured settings, as before, and its
first run records them.

Changing the backend of a session that already has checkpoints is an explicit switch only
(``switch=True``: ``dsh compact ID --backend``, a ``--compaction`` flag on resume); anything
else is refused with one line. The new backend adopts the old checkpoints (docs/compaction.md,
"Configuration": a recallable pass takes a basic head checkpoint as its state; a basic pass
merges every checkpoint in its range).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec

from dsh.config import DEFAULT_CONTEXT_WINDOW, CompactionSettings, Settings
from dsh.errors import DshError, UsageError
from dsh.events import (
    Event,
    RecordedCompaction,
    SessionSettings,
    SessionSettingsEvent,
    event_type_name,
    is_checkpoint_event,
)
from dsh.store import EventStore
from dsh.surface import Session

__all__ = [
    "COMPACTION_KEYS",
    "ROUTE_KEYS",
    "Change",
    "Resolved",
    "describe",
    "effective",
    "has_checkpoints",
    "latest",
    "read",
    "record",
    "snapshot",
]

ROUTE_KEYS = ("name", "model", "base_url", "context_window")
"""``provider.*`` keys that belong to the session."""
COMPACTION_KEYS: tuple[str, ...] = RecordedCompaction.__struct_fields__
"""``compaction.*`` keys that belong to the session."""
SUMMARIZER_ROUTE_KEYS = frozenset({"summarizer", "summarizer_provider", "summarizer_base_url"})
"""``compaction.*`` keys that choose who summarises: a flag moving one drops the recorded
summariser window (the new summariser's is set or asked for again)."""
SETTINGS_TYPE = event_type_name(SessionSettingsEvent)
REPLAY = "replay"
"""The provider that serves a recorded session's calls again (``--provider replay``)."""
_RECORDED_ROUTE = {"name": "provider", "model": "model", "base_url": "base_url"}


@dataclass(frozen=True, slots=True)
class Change:
    """A flag that overrides what the session recorded."""

    key: str
    recorded: Any
    now: Any

    def describe(self) -> str:
        return f"{self.key} {_show(self.recorded)} -> {_show(self.now)}"


@dataclass(frozen=True, slots=True)
class Resolved:
    settings: Settings
    """The settings to build the session's parts from (recorded values, then the flags)."""
    changes: tuple[Change, ...] = ()
    recorded: SessionSettings | None = None


def latest(session: Session) -> SessionSettings | None:
    """The settings the log last recorded (None: a log written before they were recorded)."""
    recorded = session.of_type(SessionSettingsEvent)
    return recorded[-1].data if recorded else None


def read(store: EventStore, session_id: str | None) -> SessionSettings | None:
    """The recorded settings of a stored session, read without taking its writer lock (a
    JSONL log is searched for its last ``session/settings`` line; any other store, or a line
    that does not read, loads the log)."""
    if session_id is None:
        return None
    last_of_type = getattr(store, "last_of_type", None)
    if last_of_type is not None:
        with contextlib.suppress(DshError):
            event = last_of_type(session_id, SETTINGS_TYPE)
            return event.data if isinstance(event, SessionSettingsEvent) else None
    with Session.open(store, session_id) as session:
        return latest(session)


def has_checkpoints(events: Sequence[Event]) -> bool:
    return any(is_checkpoint_event(event) for event in events)


def effective(
    settings: Settings,
    recorded: SessionSettings | None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    switch: bool = False,
    checkpoints: bool = False,
) -> Resolved:
    """``settings`` (config and flags merged) with the session's recorded values put back
    wherever no flag in ``overrides`` says otherwise.

    A flag that moves the route (provider, model or base URL) takes the route from the flags and
    the config; a flag that changes the backend of a session with ``checkpoints`` needs
    ``switch`` (else ``UsageError``)."""
    if recorded is None:
        return Resolved(settings)
    flags = {section: dict(values) for section, values in (overrides or {}).items()}
    provider_flags = {k: v for k, v in flags.get("provider", {}).items() if v is not None}
    compaction_flags = {k: v for k, v in flags.get("compaction", {}).items() if v is not None}
    provider, changes = _route(settings, recorded, provider_flags)
    compaction, more = _compaction(settings.compaction, recorded.compaction, compaction_flags)
    changes += more
    backend = next((c for c in changes if c.key == "compaction.backend"), None)
    if backend is not None and checkpoints and not switch:
        raise UsageError(
            f"this session has {backend.recorded} checkpoints; a pass with {backend.now} would "
            f"mix two layouts: switch it explicitly with --backend {backend.now} (the "
            f"{backend.now} backend adopts the old checkpoints)"
        )
    chosen = msgspec.structs.replace(settings, provider=provider, compaction=compaction)
    return Resolved(chosen, tuple(changes), recorded)


def _route(
    settings: Settings, recorded: SessionSettings, flags: Mapping[str, Any]
) -> tuple[Any, list[Change]]:
    values = {
        "name": recorded.provider,
        "model": recorded.model,
        "base_url": _with_credentials(recorded.base_url, settings.provider.base_url),
        "context_window": recorded.context_window,
    }
    changes = [
        Change(f"provider.{key}", _redact(values[key]), _redact(flags[key]))
        for key in ROUTE_KEYS
        if key in flags and flags[key] != values[key]
    ]
    moved = {change.key.removeprefix("provider.") for change in changes}
    if "name" in moved:  # another provider: the flags and the config choose the whole route
        provider = settings.provider
        if flags["name"] == REPLAY and "context_window" not in flags:
            # a replay serves the recorded calls again: it runs in the recorded window
            provider = msgspec.structs.replace(provider, context_window=recorded.context_window)
        return provider, changes
    if moved & {"model", "base_url"} and "context_window" not in flags:
        values["context_window"] = settings.provider.context_window  # the new model's own
    values.update({key: flags[key] for key in ROUTE_KEYS if key in flags})
    return msgspec.structs.replace(settings.provider, **values), changes


def _compaction(
    configured: CompactionSettings, recorded: RecordedCompaction, flags: Mapping[str, Any]
) -> tuple[CompactionSettings, list[Change]]:
    values = msgspec.structs.asdict(recorded)
    values["summarizer_base_url"] = _with_credentials(
        recorded.summarizer_base_url, configured.summarizer_base_url
    )
    changes = [
        Change(f"compaction.{key}", values[key], flags[key])
        for key in COMPACTION_KEYS
        if key in flags and flags[key] != values[key]
    ]
    values.update({key: flags[key] for key in COMPACTION_KEYS if key in flags})
    moved = {change.key.removeprefix("compaction.") for change in changes}
    if moved & SUMMARIZER_ROUTE_KEYS and "summarizer_context_window" not in flags:
        # another summariser: the recorded window was the old one's (set or reported)
        values["summarizer_context_window"] = configured.summarizer_context_window
    # The recorded budgets already include any per-model override of the config: none again.
    return msgspec.structs.replace(configured, **values, overrides={}), changes


def snapshot(
    settings: Settings,
    provider: str,
    model: str,
    window: int | None,
    workspace: str,
    *,
    summarizer_window: int | None = None,
) -> SessionSettings:
    """What to record for a session run with ``settings`` on the route ``provider:model``;
    ``summarizer_window`` is what the summariser's server reported (the route's)."""
    budgets = settings.compaction.for_route(provider, model)
    budgets = budgets.for_window(window or DEFAULT_CONTEXT_WINDOW)  # the budgets it runs with
    compaction = {key: getattr(budgets, key) for key in COMPACTION_KEYS}
    if compaction["summarizer_context_window"] is None:
        compaction["summarizer_context_window"] = summarizer_window
    compaction["summarizer_base_url"] = _redact(budgets.summarizer_base_url)
    return SessionSettings(
        provider=provider,
        model=model,
        compaction=RecordedCompaction(**compaction),
        workspace=workspace,
        base_url=_redact(settings.provider.base_url),
        context_window=window,
    )


def record(session: Session, settings: SessionSettings) -> SessionSettingsEvent | None:
    """Log ``settings`` unless they are what the session last recorded; ``changed`` names the
    keys that differ from that record. Returns the event written, if any."""
    before = latest(session)
    fresh = msgspec.structs.replace(settings, changed=())
    if before is not None and msgspec.structs.replace(before, changed=()) == fresh:
        return None
    changed = () if before is None else _differences(before, fresh)
    event = session.append(msgspec.structs.replace(fresh, changed=changed))
    assert isinstance(event, SessionSettingsEvent)
    return event


def _differences(before: SessionSettings, after: SessionSettings) -> tuple[str, ...]:
    keys: list[str] = []
    for key, field in _RECORDED_ROUTE.items():
        if getattr(before, field) != getattr(after, field):
            keys.append(f"provider.{key}")
    if before.context_window != after.context_window:
        keys.append("provider.context_window")
    keys += [
        f"compaction.{key}"
        for key in COMPACTION_KEYS
        if getattr(before.compaction, key) != getattr(after.compaction, key)
    ]
    if before.workspace != after.workspace:
        keys.append("workspace")
    return tuple(keys)


def describe(recorded: SessionSettings | None) -> list[str]:
    """``dsh sessions show ID --view settings``: one ``key  value`` line per setting."""
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
    rows += [(f"compaction.{k}", getattr(recorded.compaction, k)) for k in COMPACTION_KEYS]
    rows.append(("workspace", recorded.workspace))
    if recorded.changed:
        rows.append(("last changed", ", ".join(recorded.changed)))
    width = max(len(key) for key, _ in rows)
    return [f"{key.ljust(width)}  {_show(value)}" for key, value in rows]


def _show(value: Any) -> str:
    return "(none)" if value is None else str(value)


def _redact(url: Any) -> Any:
    """A URL without the user and password it may carry (they never enter the log)."""
    if not isinstance(url, str):
        return url
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _with_credentials(recorded: str | None, configured: str | None) -> str | None:
    """The recorded URL, with the configured credentials back if it is the same endpoint."""
    if recorded is not None and configured is not None and _redact(configured) == recorded:
        return configured
    return recorded
