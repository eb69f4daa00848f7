"""What a session's log records of its settings (``session/settings``), and the line that says
what a reopen's flags change of them.

``snapshot`` is what to record for a session run with some settings on a route (never a key:
a URL's credentials are dropped, a secret query parameter masked: ``dsh.config.redact``);
``record`` logs it unless it is what the session last recorded, naming the keys that differ
in ``changed``. A flag given on reopen changes a recorded value (``Change``), and what it
changes may move others with it (a window asked of another server, the budgets scaled to the
window): ``changed_warning`` says every one of them in one
line, the flags' own first, as the record logs them (``changes_with``). The rules that choose
the values are ``dsh.agent.session_settings``'s.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from dsh.config import DEFAULT_CONTEXT_WINDOW, Settings, redact
from dsh.events import Event, RecordedCompaction, SessionSettings, SessionSettingsEvent
from dsh.surface import Session

E = TypeVar("E", bound=Event)

if TYPE_CHECKING:  # only named: this module stays light (``dsh.agent.session_settings``'s)
    from dsh.agent.runtime import Route

__all__ = [
    "COMPACTION_KEYS",
    "Change",
    "as_recorded_today",
    "changed_warning",
    "changes_with",
    "latest",
    "record",
    "record_settings",
    "redact",
    "say_once",
    "snapshot",
]

COMPACTION_KEYS: tuple[str, ...] = RecordedCompaction.__struct_fields__
"""``compaction.*`` keys that belong to the session."""
_RECORDED_ROUTE = {"name": "provider", "model": "model", "base_url": "base_url"}
SAID_APART = frozenset({"workspace"})
"""Recorded keys a change of which is said by a line of its own (``--cwd``'s)."""
log = logging.getLogger("dsh.agent.session_settings")  # where its warnings were always logged
_said: set[str] = set()
_said_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Change:
    """A recorded value that changes: the flag's own, or one that moves with it."""

    key: str
    recorded: Any
    now: Any

    def describe(self) -> str:
        """``key recorded -> now``, a base URL as the log records it (``dsh.config.redact``:
        never its password nor a secret query parameter, whatever gave it)."""
        shown = redact if self.key.endswith("base_url") else (lambda value: value)
        return f"{self.key} {_show(shown(self.recorded))} -> {_show(shown(self.now))}"


def latest(session: Session) -> SessionSettings | None:
    """The settings the log last recorded (None: a log written before they were recorded)."""
    recorded = session.of_type(SessionSettingsEvent)
    return recorded[-1].data if recorded else None


def snapshot(
    settings: Settings,
    provider: str,
    model: str,
    window: int | None,
    workspace: str,
    *,
    summarizer_window: int | None = None,
    window_asked: bool = False,
    window_reported: bool | None = None,
) -> SessionSettings:
    """What to record for a session run with ``settings`` on the route ``provider:model``;
    ``summarizer_window`` is what the summariser's server reported (the route's);
    ``window_asked``, whether ``window`` is what the route's server was asked for;
    ``window_reported``, whether, asked, the server gave it (False: it gave none, and
    ``window`` is the default assumed)."""
    budgets = settings.compaction.for_route(provider, model)
    budgets = budgets.for_window(window or DEFAULT_CONTEXT_WINDOW)  # the budgets it runs with
    compaction = {key: getattr(budgets, key) for key in COMPACTION_KEYS}
    if compaction["summarizer_context_window"] is None:
        compaction["summarizer_context_window"] = summarizer_window
    compaction["summarizer_base_url"] = redact(budgets.summarizer_base_url)
    return SessionSettings(
        provider=provider,
        model=model,
        compaction=RecordedCompaction(**compaction),
        workspace=workspace,
        base_url=redact(settings.provider.base_url),
        context_window=window,
        window_asked=window_asked,
        window_reported=window_reported if window_asked else None,
    )


def as_recorded_today(event: E) -> E:
    """``event`` as this dsh would record it: a ``session/settings`` an older dsh logged with a
    base URL's user and password or a secret query value (``?api_key=…``, before ``snapshot``
    redacted them) has its ``base_url`` and ``compaction.summarizer_base_url`` redacted, as
    ``--view settings`` shows them; any other event, and a record with nothing to hide, is
    returned as it is. The log itself is never rewritten."""
    if not isinstance(event, SessionSettingsEvent):
        return event
    data = event.data
    base_url = redact(data.base_url)
    summarizer_base_url = redact(data.compaction.summarizer_base_url)
    if base_url == data.base_url and summarizer_base_url == data.compaction.summarizer_base_url:
        return event
    compaction = msgspec.structs.replace(data.compaction, summarizer_base_url=summarizer_base_url)
    today = msgspec.structs.replace(data, base_url=base_url, compaction=compaction)
    return msgspec.structs.replace(event, data=today)


def record(session: Session, settings: SessionSettings) -> SessionSettingsEvent | None:
    """Log ``settings`` unless they are what the session last recorded; ``changed`` names the
    keys that differ from that record. Returns the event written, if any. A record made before
    dsh said whether its server reported the window (``window_reported`` None) is not logged
    again for that alone."""
    before = latest(session)
    fresh = msgspec.structs.replace(settings, changed=())
    if before is not None and _same(before, fresh):
        return None
    changed = () if before is None else differences(before, fresh)
    event = session.append(msgspec.structs.replace(fresh, changed=changed))
    assert isinstance(event, SessionSettingsEvent)
    return event


def _same(before: SessionSettings, fresh: SessionSettings) -> bool:
    before = msgspec.structs.replace(before, changed=())
    if before.window_reported is None and before.window_asked == fresh.window_asked:
        fresh = msgspec.structs.replace(fresh, window_reported=None)
    return before == fresh


def differences(before: SessionSettings, after: SessionSettings) -> tuple[str, ...]:
    """The keys whose recorded values differ between two records."""
    return tuple(key for key in _keys() if _recorded(before, key) != _recorded(after, key))


def changes_with(
    before: SessionSettings | None,
    event: SessionSettingsEvent | None,
    changes: Sequence[Change],
    said: Collection[str] = (),
) -> list[Change]:
    """What the record ``event`` changed besides the flags' own ``changes`` (a window asked of
    the server a flag moved to, the budgets that follow it), each from ``before`` to what it
    logged; none for keys another line says (``said``: a replaced value; ``SAID_APART``)."""
    if before is None or event is None or not changes:
        return []
    named = {change.key for change in changes} | set(said) | SAID_APART
    return [
        Change(key, _recorded(before, key), _recorded(event.data, key))
        for key in event.data.changed
        if key not in named
    ]


def changed_warning(
    session_id: str | None, changes: Sequence[Change], moved: Sequence[Change] = ()
) -> str:
    """The one line that says which recorded values the flags given now override, and
    ``moved``, what changes with them (``changes_with``)."""
    values = "; ".join(change.describe() for change in changes)
    line = f"session {session_id}: the flags change its recorded settings: {values}"
    if moved:
        line += "; with them: " + "; ".join(change.describe() for change in moved)
    return line


def route_snapshot(
    session: Session, settings: Settings, route: Route, workspace: str | None = None
) -> SessionSettings:
    """What ``record_settings`` logs for ``session`` run with ``settings`` on ``route``;
    ``workspace`` unset keeps the recorded one (a ``--cwd`` run's), else the header's."""
    if workspace is None:
        recorded = latest(session)
        workspace = recorded.workspace if recorded is not None else session.header.cwd
    return snapshot(
        settings,
        route.provider.name,
        route.model,
        route.context_window,
        workspace,
        summarizer_window=route.summarizer_window,
        window_asked=route.window_from != "settings",
        window_reported=route.window_from == "server",
    )


def record_settings(
    session: Session,
    settings: Settings,
    route: Route,
    workspace: str | None = None,
    *,
    changes: Sequence[Change] = (),
    said: Collection[str] = (),
    warn: Callable[[str], None] | None = None,
) -> bool:
    """Log the settings ``session`` runs with, when they are new or changed (True: logged);
    ``workspace`` unset keeps the recorded one (a ``--cwd`` run's), else the header's.
    ``changes``, what the flags change of its recorded settings, are said once (``warn``, else
    ``say_once``) when this logs them, with what the record changes along with them but
    the keys another line says (``said``: the replaced ones): a face says them here, not where
    it resolved them, so a prompt refused before anything is logged (which changes nothing)
    says nothing."""
    before = latest(session)
    event = record(session, route_snapshot(session, settings, route, workspace))
    if event is None:
        return False
    moved = changes_with(before, event, changes, said)
    if changes:
        (warn or say_once)(changed_warning(session.id, changes, moved))
    return True


def say_once(line: str) -> None:
    """Log ``line`` as a warning unless this process already did (every face resolves a
    session's settings more than once while it opens it)."""
    with _said_lock:
        if line in _said:
            return
        _said.add(line)
    log.warning("%s", line)


def _keys() -> list[str]:
    route = [f"provider.{key}" for key in (*_RECORDED_ROUTE, "context_window")]
    return [*route, *(f"compaction.{key}" for key in COMPACTION_KEYS), "workspace"]


def _recorded(settings: SessionSettings, key: str) -> Any:
    section, _, name = key.partition(".")
    if section == "compaction":
        return getattr(settings.compaction, name)
    if section == "provider":
        return getattr(settings, _RECORDED_ROUTE.get(name, name))
    return getattr(settings, key)


def _show(value: Any) -> str:
    return "(none)" if value is None else str(value)
