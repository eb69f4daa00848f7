"""``dsh compact ID [--focus TEXT] [--backend B]``: compact an idle stored session now, with the
session's own recorded settings (``dsh.agent.session_settings``); ``--backend`` switches them, and
``--summarizer`` / ``--summarizer-base-url`` override who summarises (logged, as every flag that
changes them, once the pass has landed: ``_Wiring``). ``--summarizer-base-url`` with a summariser
that calls no model (extractive) is refused: it would be recorded and never used.

A call with nothing to compact (no plan, no interrupted pass to finish) appends nothing: no
``command/run``/``command/done`` pair and no ``session/end-seed`` are logged for it; a backend
switch it was given (``--backend``, ``--compaction``) is still made, logged as ``session/settings``
as a pass would log it, said on stderr and in its answer. The
summariser, the budgets and the window come from the same builder as the TUI's and the web's
``/compact`` (``dsh.agent.wiring``), on the route the session last ran with.

Ctrl-C, SIGTERM and SIGHUP cancel the pass (its command is answered ``Compaction cancelled.``
in the log) and say so in one line naming the signal, as ``dsh run`` does: ``dsh: warning:
stopped by SIGTERM: compaction cancelled, nothing compacted in session ID`` (exit 128 + its
number).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import click
import msgspec

from dsh.agent import session_settings
from dsh.agent.asked_window import asks_again
from dsh.agent.runtime import Route, WindowFrom, resolve_route, summarizer_target
from dsh.agent.session_runner import CompactionOff, SessionRunner, SettingsWiring
from dsh.agent.settings_record import changes_with, route_snapshot
from dsh.cli import context, termination
from dsh.cli.options import RouteFlags, summarizer_options
from dsh.config import Settings, load_settings, window_too_small
from dsh.errors import ConfigError, UsageError
from dsh.events import (
    CommandDoneEvent,
    Event,
    RequestContext,
    RequestContextEvent,
    SessionSettings,
)
from dsh.llm.registry import KEYLESS_PROVIDERS, KNOWN_PROVIDERS
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalAnswer
from dsh.tools.terminal_text import printable_text


@click.command("compact")
@click.argument("session_id")
@click.option("--focus", default=None, help="What the summary should keep in focus.")
@summarizer_options
@click.option(
    "--backend",
    type=click.Choice(["recallable", "basic"]),
    default=None,
    help="Switch the session's compaction backend (it adopts the checkpoints it has), even "
    "when there is nothing to compact yet.",
)
@click.option(
    "--compaction",
    type=click.Choice(["recallable", "basic"]),
    default=None,
    help="Compact with this backend; refused if it would mix layouts (see --backend).",
)
def compact(
    session_id: str,
    focus: str | None,
    summarizer: str | None,
    summarizer_base_url: str | None,
    backend: str | None,
    compaction: str | None,
) -> None:
    """Compact a stored, idle session and print what happened."""
    if backend is not None and compaction is not None and backend != compaction:
        raise UsageError("--backend and --compaction name different backends; give one")
    given = RouteFlags(
        compaction=backend or compaction,
        summarizer=summarizer,
        summarizer_base_url=summarizer_base_url,
    )
    flags: dict[str, dict[str, object]] = {"compaction": given.overrides()["compaction"]}
    settings = load_settings(overrides=flags)
    store = context.store(settings)
    session = Session.open(store, context.resolve_session_id(store, session_id), writable=True)
    for warning in session.warnings:  # what this open repaired, as every face says it
        context.warn(warning)
    try:
        resolved = _own_settings(session, settings, flags, switch=backend is not None)
        settings, changes = resolved.settings, resolved.changes
        if summarizer_base_url is not None and settings.compaction.summarizer == "extractive":
            raise UsageError(
                f"--summarizer-base-url is for a model summariser; session {session.id}'s is "
                "extractive, which calls no model: name the model with --summarizer MODEL"
            )
        route = session_route(settings, session, store, resolved.recorded)
        switch = given.compaction is not None
        wiring = _Wiring(
            settings,
            lambda: route,
            recorded_wins=False,
            changes=changes,
            said=resolved.said,
            switch=switch,
        )
        runner = SessionRunner(session, wiring, approver=_deny)
        termination.install()  # SIGTERM / SIGHUP cancel the pass like Ctrl-C
        before = len(session.events)
        ok, text = asyncio.run(_compact(runner, focus))
        if ok and _landed(session, after=before):
            wiring.land(session)
        elif ok and switch and len(session.events) == before:  # nothing to compact: the
            # switch asked for is made all the same, logged as a pass would log it
            wiring.record_settings_of(session)
            if len(session.events) > before:
                backend = settings.compaction.backend
                text += f" Its compaction backend is now {backend} (recorded)."
    except KeyboardInterrupt:
        termination.note_interrupt()  # Ctrl-C itself: said as SIGTERM and SIGHUP are
        context.warn(
            f"stopped by {termination.name()}: compaction cancelled, nothing compacted in "
            f"session {session.id}"
        )
        raise SystemExit(termination.exit_status()) from None
    finally:
        session.close()
    click.echo(printable_text(text))
    if termination.stopped_by() is not None:
        raise SystemExit(termination.exit_status())
    if not ok:
        raise SystemExit(1)


async def _compact(runner: SessionRunner, focus: str | None) -> tuple[bool, str]:
    try:
        return await runner.start_compact(focus, log_nothing=False)
    except CompactionOff as exc:
        raise UsageError(f"{exc}; choose --backend basic or recallable") from exc


def _own_settings(
    session: Session, settings: Settings, flags: dict[str, dict[str, object]], *, switch: bool
) -> session_settings.Resolved:
    """The session's own recorded settings with the flags over them (a log without them: the
    configured ones); a flag that changes them is said when the pass logs it (a call with
    nothing to compact logs nothing, and changes nothing)."""
    return session_settings.effective(
        settings,
        session_settings.latest(session),
        flags,
        switch=switch,
        checkpoints=session_settings.has_checkpoints(session.events),
        session_id=session.id,
    )


def session_route(
    settings: Settings,
    session: Session,
    store: EventStore,
    recorded: SessionSettings | None = None,
) -> Route:
    """The route a stored session compacts with: the provider, model and window it recorded
    (else those it last ran with, from its log), on the configured provider when a model
    summariser needs it. An extractive summariser, or one on a provider of its own, does not call
    the conversation's provider, so that provider is not resolved (no key, no script needed)."""
    logged = _logged_route(session, recorded, settings.provider.context_window)
    conversation = logged.provider if logged is not None else settings.provider.name
    _refuse_a_keyless_summariser(settings, session, conversation)
    # a window its server gave stays the server's (recorded so); only a call to it asks again
    asked = recorded is not None and asks_again(recorded) and not settings.provider.context_window
    # ... and stays what it was: reported, or the default assumed when the server gave none
    reported: WindowFrom = "default" if recorded and recorded.window_reported is False else "server"
    origin: WindowFrom = reported if asked else "settings"
    if not _summarizes_on(settings, conversation):
        if logged is None:
            cfg = settings.provider
            return Route(_Unreachable(cfg.name), cfg.model or "", cfg.context_window)
        window = logged.context_window or settings.provider.context_window
        return Route(_Unreachable(logged.provider), logged.model, window, window_from=origin)
    configured = resolve_route(settings, store=store)
    if logged is None or logged.provider != configured.provider.name:
        return configured
    if asked and configured.window_from == "server":  # its server, asked again, answered
        return replace(configured, model=logged.model)
    window = logged.context_window or configured.context_window
    return Route(configured.provider, logged.model, window, window_from=origin)


def _refuse_a_keyless_summariser(settings: Settings, session: Session, conversation: str) -> None:
    """A model summariser on the scripted or replay provider cannot run here: those providers
    answer from a script (``--script``) or a recorded session (``--replay``), which only
    ``dsh run`` takes. Said as what ``dsh compact`` can do instead."""
    target = summarizer_target(settings, conversation)
    if target is None:
        return
    on_conversation = target[0] == conversation
    provider = settings.provider.name if on_conversation else target[0]
    if provider not in KEYLESS_PROVIDERS:
        return
    elsewhere = ""
    if settings.compaction.summarizer_provider is None:  # else it names the provider, not a flag
        has_url = bool(settings.compaction.summarizer_base_url)  # recorded or a flag's
        names = [
            name
            for name, known in KNOWN_PROVIDERS.items()
            if has_url or known.base_url or known.adapter != "openai-compat"
        ]
        unnamed = "" if has_url else "; openai-compatible with --summarizer-base-url"
        elsewhere = (
            f" or another provider's model (--summarizer PROVIDER:MODEL: {', '.join(names)}"
            f"{unnamed})"
        )
    flag = "--script" if provider == "scripted" else "--replay"
    what = f"session {session.id} runs on" if on_conversation else "the summariser is on"
    raise UsageError(
        f"{what} the {provider} provider, which dsh compact cannot call (it takes no {flag}): "
        f"compact with --summarizer extractive (no model){elsewhere}"
    )


def _summarizes_on(settings: Settings, provider: str) -> bool:
    """Whether the configured summariser calls ``provider`` (the conversation's)."""
    target = summarizer_target(settings, provider)
    return target is not None and target[0] == provider


def _logged_route(
    session: Session, recorded: SessionSettings | None, configured_window: int | None
) -> RequestContext | None:
    """The provider, model and window the session runs with: recorded, else its latest
    logged route. ``configured_window`` is the session's window as its settings resolved it
    (``_own_settings``): the recorded one, the configured one that replaced a recorded one no
    longer valid (said with the rest of its settings), or, for a window its server gave (asked
    again, ``dsh.agent.asked_window``), the one the user now sets, else None: the recorded one."""
    if recorded is not None:
        window = configured_window
        if window is None and not window_too_small(recorded.context_window):
            window = recorded.context_window
        return RequestContext(
            provider=recorded.provider, model=recorded.model, context_window=window
        )
    for event in reversed(session.events):
        if isinstance(event, RequestContextEvent):
            logged = event.data
            window = session_settings.logged_window(
                session.id, logged.context_window, configured_window
            )
            return msgspec.structs.replace(logged, context_window=window)
    return None


class _Wiring(SettingsWiring):
    """The settings wiring on the session's settings as ``_own_settings`` resolved them.

    What they change of the recorded ones (the flags' changes, said on stderr as they are
    logged) is logged once the pass has landed (``land``), not as it starts: a pass cancelled,
    failed or killed, or a call that compacts nothing new, leaves the session's settings as
    they were, so a plain ``dsh compact`` later does not take a summariser that never wrote a
    summary. A backend switch (``switch``: ``--backend``, ``--compaction``) is logged as the
    pass starts, the summariser as recorded beside it: the rest of a pass a killed process left
    half committed is committed with the recorded backend, which must be the one that planned
    it (``dsh.compaction.engine``)."""

    def __init__(
        self,
        *args: Any,
        changes: Sequence[session_settings.Change],
        said: Collection[str],
        switch: bool,
        **options: Any,
    ) -> None:
        super().__init__(*args, **options)
        self.changes = changes
        self._said_apart = said
        """The recorded keys another line says (the replaced values no longer valid)."""
        self._switch = switch
        self._said: list[session_settings.Change] = []
        self._landing: tuple[Settings, Route] | None = None

    def record_settings_of(self, session: Session) -> None:
        settings, route = self.own(session)
        self._landing = settings, route
        recorded = session_settings.latest(session)
        backend = settings.compaction.backend
        kept = recorded.compaction.backend == backend if recorded is not None else not self._switch
        if kept:
            return  # all of it logged by ``land``
        first = route_snapshot(session, settings, route)
        if recorded is not None:  # its summariser kept until the pass lands
            own = {key: getattr(recorded.compaction, key) for key in _SUMMARIZER_KEYS}
            compaction = msgspec.structs.replace(first.compaction, **own)
            first = msgspec.structs.replace(first, compaction=compaction)
        event = session_settings.record(session, first)
        if event is not None:
            changes = [c for c in self.changes if c.key not in _SUMMARIZER_CHANGES]
            self._say(session, changes, changes_with(recorded, event, changes, self._said_apart))

    def land(self, session: Session) -> None:
        """The pass landed: log the settings it ran with, saying what the flags changed."""
        if self._landing is None:
            return
        before = session_settings.latest(session)
        event = session_settings.record(session, route_snapshot(session, *self._landing))
        if event is not None:
            changes = [c for c in self.changes if c not in self._said]
            self._say(session, changes, changes_with(before, event, changes, self._said_apart))

    def _say(
        self,
        session: Session,
        changes: Sequence[session_settings.Change],
        moved: Sequence[session_settings.Change],
    ) -> None:
        if changes:
            context.warn(session_settings.changed_warning(session.id, changes, moved))
            self._said.extend(changes)


_SUMMARIZER_KEYS = (*sorted(session_settings.SUMMARIZER_ROUTE_KEYS), "summarizer_context_window")
"""The recorded compaction keys that say who summarises."""
_SUMMARIZER_CHANGES = frozenset(f"compaction.{key}" for key in _SUMMARIZER_KEYS)


def _landed(session: Session, *, after: int) -> bool:
    """Whether the command logged after the first ``after`` events answered with a pass of
    its own (its ``command/done`` cites the pass's state summary; one that only finished an
    earlier command's pass, or found nothing, cites none)."""
    done = [e for e in session.of_type(CommandDoneEvent) if e.seq >= after]
    return any(e.data.ok and e.data.source_event_seq is not None for e in done)


@dataclass(slots=True)
class _Unreachable:
    """The provider a session ran on, by name only: compacting extractively calls no model."""

    name: str

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        raise ConfigError(f"dsh compact does not reach the {self.name} provider")


async def _deny(tool: str, args: dict[str, object], protected: str | None) -> ApprovalAnswer:
    return "deny"  # dsh compact runs no turn, so no tool asks
