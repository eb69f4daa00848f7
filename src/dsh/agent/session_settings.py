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
next ``record`` logs the change, which the face says then (``changed_warning``, naming what
changes with it: ``dsh.agent.settings_record``): a prompt refused before anything is logged
changes nothing, and says nothing. A window the user set stays when a flag moves the session
to another model or server of its provider; another provider is a new route, its window its
own. The config file never re-routes a
recorded session. A window the route's server reported (``window_asked``) is the server's: it is
left unset (unless the user sets one) for the route to ask again (``dsh.agent.asked_window``),
and the budgets scaled to it follow, as they follow a flag's window. A log without the event
(written before it existed) gets the configured settings, as before, and its first run records
them.

A recorded value is checked on reopen by the rules a value given now is checked by
(``dsh.config.rules``): one no longer valid (a window under ``MIN_CONTEXT_WINDOW``, or a
summariser's under ``MIN_SUMMARIZER_WINDOW``, recorded before that bound — a 2,048-token
conversation window since the bound became 4,096 — a budget a later rule refuses) is replaced
by the configured value (``resolved.replaced``) and said once, in one warning line; the record
is never rewritten, and the next ``record`` logs the settings actually used, naming the
replaced keys in ``changed``. Whether the window leaves room for the system prompt and tools
as sent (``dsh.agent.room``) is checked where the agent is built, on reopen as at start.

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

import msgspec

from dsh.agent.asked_window import asks_again
from dsh.agent.settings_record import (
    COMPACTION_KEYS,
    Change,
    changed_warning,
    latest,
    record,
    snapshot,
)
from dsh.agent.settings_record import redact as _redact
from dsh.agent.settings_record import say_once as _say_once
from dsh.config import (
    DEFAULT_CONTEXT_WINDOW,
    WINDOW_RULE,
    CompactionSettings,
    Problem,
    Settings,
    session_problems,
    window_too_small,
)
from dsh.errors import ConfigError, DshError, UsageError, error_line
from dsh.events import (
    NO_ROUTE,
    Event,
    RecordedCompaction,
    SessionSettings,
    is_checkpoint_event,
)
from dsh.store import EventStore
from dsh.surface import Session

__all__ = [
    "COMPACTION_KEYS",
    "ROUTE_KEYS",
    "Change",
    "Replaced",
    "Resolved",
    "changed_warning",
    "effective",
    "has_checkpoints",
    "latest",
    "logged_window",
    "read",
    "record",
    "replaced_warning",
    "say_changed",
    "snapshot",
]

ROUTE_KEYS = ("name", "model", "base_url", "context_window")
"""``provider.*`` keys that belong to the session."""
SUMMARIZER_ROUTE_KEYS = frozenset({"summarizer", "summarizer_provider", "summarizer_base_url"})
"""``compaction.*`` keys that choose who summarises: a flag moving one drops the recorded
summariser window (the new summariser's is set or asked for again)."""
REPLAY = "replay"
"""The provider that serves a recorded session's calls again (``--provider replay``)."""
WINDOW_KEY = "provider.context_window"
BASE_URL_KEY = "provider.base_url"
WINDOW_SCALED_KEYS = ("chunk_tokens", "stub_tokens", "state_max_tokens")
"""The budgets ``snapshot`` records scaled to the window when the config leaves them unset: a
replaced window, or one a flag changes, takes those it scaled back to the configured ones
(unset: scaled to the new window); one that is not what it scaled was set, and is kept."""


@dataclass(frozen=True, slots=True)
class Replaced:
    """A recorded value that is no longer valid, and the configured one used instead."""

    key: str
    recorded: Any
    now: Any
    rule: str
    """Why: the rule the recorded value breaks, as config validation says it."""

    def describe(self) -> str:
        # a recorded URL may hold a terminal escape: shown escaped, as error_line shows text
        shown = [
            "(unset)" if value is None else error_line(str(value))
            for value in (self.recorded, self.now)
        ]
        return f"{self.key} {shown[0]} -> {shown[1]} ({self.rule})"


@dataclass(frozen=True, slots=True)
class Resolved:
    settings: Settings
    """The settings to build the session's parts from (recorded values, then the flags)."""
    changes: tuple[Change, ...] = ()
    recorded: SessionSettings | None = None
    replaced: tuple[Replaced, ...] = ()

    @property
    def said(self) -> frozenset[str]:
        """The keys the replaced values' own line says (``replaced_warning``)."""
        return frozenset(replaced.key for replaced in self.replaced)


def read(store: EventStore, session_id: str | None) -> SessionSettings | None:
    """The recorded settings of a stored session, read without taking its writer lock or
    loading its log (``EventStore.latest_settings``: JSONL's settings record, SQLite's index);
    when that fails (a settings line that does not read, no such session) the log is loaded,
    which says what is wrong."""
    if session_id is None:
        return None
    with contextlib.suppress(DshError):
        event = store.latest_settings(session_id)
        return event.data if event is not None else None
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
    session_id: str | None = None,
) -> Resolved:
    """``settings`` (config and flags merged) with the session's recorded values put back
    wherever no flag in ``overrides`` says otherwise.

    A flag that moves the route to another provider takes the route from the flags and the
    config; one that moves it to another model or base URL keeps the recorded window when it
    was set (not asked of a server). A flag that changes the backend of a session with
    ``checkpoints`` needs ``switch`` (else ``UsageError``). A recorded window its server
    reported is not put back: the configured one (None: the route asks the server again,
    ``dsh.agent.asked_window``). A recorded value no longer valid is replaced by the
    configured one (``Resolved.replaced``); given the ``session_id``, that is logged as one
    warning line, once per process. A record without a route (``NO_ROUTE``) keeps its
    budgets, on the configured route and summariser."""
    if recorded is None:
        return Resolved(settings)
    flags = {section: dict(values) for section, values in (overrides or {}).items()}
    provider_flags = {k: v for k, v in flags.get("provider", {}).items() if v is not None}
    compaction_flags = {k: v for k, v in flags.get("compaction", {}).items() if v is not None}
    routed = recorded.provider != NO_ROUTE  # else an import dropped the log's route
    if routed:
        provider, changes = _route(settings, recorded, provider_flags)
        budgets = recorded.compaction
    else:  # the configured route and summariser, as in a log that recorded none
        provider, changes = settings.provider, []
        budgets = _configured_summarizer(recorded.compaction, settings.compaction)
    compaction, more = _compaction(settings.compaction, budgets, compaction_flags)
    if routed and provider.context_window != recorded.context_window:  # a flag's, asked again
        compaction = _follow_window(compaction, settings, recorded, compaction_flags)
    changes += more
    backend = next((c for c in changes if c.key == "compaction.backend"), None)
    if backend is not None and checkpoints and not switch:
        raise UsageError(
            f"this session has {backend.recorded} checkpoints; a pass with {backend.now} would "
            f"mix two layouts: switch it explicitly with --backend {backend.now} (the "
            f"{backend.now} backend adopts the old checkpoints)"
        )
    chosen = msgspec.structs.replace(settings, provider=provider, compaction=compaction)
    flagged = {f"provider.{key}" for key in provider_flags}
    flagged |= {f"compaction.{key}" for key in compaction_flags}
    chosen, replaced = _still_valid(chosen, settings, flagged)
    if replaced and session_id is not None:
        _say_once(replaced_warning(session_id, replaced))
    return Resolved(chosen, tuple(changes), recorded if routed else None, replaced)


def replaced_warning(session_id: str, replaced: Sequence[Replaced]) -> str:
    """The one line that says which recorded values a reopen replaced, and why."""
    values = "; ".join(item.describe() for item in replaced)
    return (
        f"session {session_id} recorded settings that are no longer valid; using the "
        f"configured ones instead: {values}"
    )


def say_changed(session_id: str, changes: Sequence[Change], moved: Sequence[Change] = ()) -> None:
    """Log ``changed_warning`` once per process, when there is a change (a face says it as the
    change is recorded: ``dsh.agent.session_runner.record_settings``)."""
    if changes:
        _say_once(changed_warning(session_id, changes, moved))


def logged_window(session_id: str, logged: int | None, configured: int | None) -> int | None:
    """The window a log without recorded settings last ran in (its latest ``request/context``),
    as its reopen uses it: one no longer valid gives way to the ``configured`` one, said once
    as a replaced recorded value is."""
    if not window_too_small(logged):
        return logged
    replaced = Replaced(WINDOW_KEY, logged, configured, WINDOW_RULE)
    _say_once(replaced_warning(session_id, [replaced]))
    return configured


def _still_valid(
    chosen: Settings, configured: Settings, flagged: set[str]
) -> tuple[Settings, tuple[Replaced, ...]]:
    """``chosen`` with every recorded value that breaks a rule of ``session_problems``
    replaced by the configured one; a value a flag gave is never replaced (the flags were
    validated with the config). A problem is fixed at the key it names when that key holds a
    recorded value, else (a rule between a recorded value and a configured or flagged one) at
    the recorded keys its rule involves.

    Each round replaces at least one recorded value by its configured one, which is then no
    longer recorded: the rounds end."""
    route = (chosen.provider.name, chosen.provider.model or "")
    budgets = msgspec.structs.replace(configured.compaction.for_route(*route), overrides={})
    defaults = msgspec.structs.replace(configured, compaction=budgets)
    replaced: list[Replaced] = []
    while problems := session_problems(chosen):
        problem = problems[0]
        recorded = {
            key
            for key in (WINDOW_KEY, BASE_URL_KEY, *(f"compaction.{n}" for n in COMPACTION_KEYS))
            if key not in flagged and _value(chosen, key) != _value(defaults, key)
        }
        if problem.key in recorded:
            keys = [problem.key]
        else:
            keys = [key for key in problem.involves if key in recorded]
        if not keys:
            raise ConfigError(str(problem))  # the config and the flags alone: refused at load
        reasons = {key: _reason(problem, key) for key in keys}
        if WINDOW_KEY in keys:  # the budgets scaled to the window go with it
            for key, scaled in _scaled_to(chosen.compaction, _value(chosen, WINDOW_KEY)).items():
                if key in recorded and _value(chosen, key) == scaled:
                    reasons.setdefault(key, "scaled to that window")
        for key, why in reasons.items():
            shown = (_redact(_value(chosen, key)), _redact(_value(defaults, key)))
            replaced.append(Replaced(key, *shown, why))
            chosen = _with(chosen, key, _value(defaults, key))
    return chosen, tuple(replaced)


def _follow_window(
    compaction: CompactionSettings,
    configured: Settings,
    recorded: SessionSettings,
    flags: Mapping[str, Any],
) -> CompactionSettings:
    """The budgets after the recorded window gave way (to a flag's, to the configured one of a
    moved route, to its server's asked again): each that ``snapshot`` scaled to the recorded
    window (equal to what it gave, given by no flag) takes its configured value (unset: scaled
    to the new window), as with a replaced window — a session begun in 128k and moved to an 8k
    model kept a 4,096-token state cap."""
    scaled = _scaled_to(compaction, recorded.context_window or DEFAULT_CONTEXT_WINDOW)
    budgets = configured.compaction.for_route(recorded.provider, recorded.model)
    values = {
        name: getattr(budgets, name)
        for name in WINDOW_SCALED_KEYS
        if name not in flags and getattr(compaction, name) == scaled[f"compaction.{name}"]
    }
    return msgspec.structs.replace(compaction, **values)


def _scaled_to(compaction: CompactionSettings, window: int) -> dict[str, int]:
    """The budgets ``snapshot`` records for ``window`` when the config leaves them unset."""
    unset = dict.fromkeys(WINDOW_SCALED_KEYS)
    scaled = msgspec.structs.replace(compaction, **unset).for_window(window)
    return {f"compaction.{name}": getattr(scaled, name) for name in WINDOW_SCALED_KEYS}


def _reason(problem: Problem, key: str) -> str:
    return problem.rule if key == problem.key else f"{problem.key} {problem.rule}"


def _value(settings: Settings, key: str) -> Any:
    section, _, name = key.partition(".")
    return getattr(getattr(settings, section), name)


def _with(settings: Settings, key: str, value: Any) -> Settings:
    section, _, name = key.partition(".")
    changed = msgspec.structs.replace(getattr(settings, section), **{name: value})
    return msgspec.structs.replace(settings, **{section: changed})


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
    if asks_again(recorded):  # the server's window: asked again, unless the user gives one
        values["context_window"] = settings.provider.context_window
    moved = {change.key.removeprefix("provider.") for change in changes}
    if "name" in moved:  # another provider: the flags and the config choose the whole route
        provider = settings.provider
        if flags["name"] == REPLAY and "context_window" not in flags:
            # a replay serves the recorded calls again: it runs in the recorded window
            provider = msgspec.structs.replace(provider, context_window=recorded.context_window)
        return provider, changes
    # another model or server of the same provider: a window set stays the session's (one
    # asked is asked of the new one, above); it once gave way, and a silent server's assumed
    # 128,000 tokens replaced the 8,000 the user set for the model
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
        Change(f"compaction.{key}", _redact(values[key]), _redact(flags[key]))
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


def _configured_summarizer(
    recorded: RecordedCompaction, configured: CompactionSettings
) -> RecordedCompaction:
    """``recorded`` on the configured summariser (its provider, server and window)."""
    keys = ("summarizer", "summarizer_provider", "summarizer_context_window")
    chosen = {key: getattr(configured, key) for key in keys}
    url = _redact(configured.summarizer_base_url)  # ``_compaction`` puts its credentials back
    return msgspec.structs.replace(recorded, **chosen, summarizer_base_url=url)


def _with_credentials(recorded: str | None, configured: str | None) -> str | None:
    """The recorded URL, with the configured credentials back if it is the same endpoint (a
    log written before dsh masked a secret query parameter recorded it whole)."""
    if recorded is not None and configured is not None and _redact(configured) == _redact(recorded):
        return configured
    return recorded
