"""``Session``: the append-only log of one session together with its live surface.

Append validates an event against every rule of docs/architecture.md ("The session log", "The
surface"), writes it through the store, then folds it into the surface and only then tells
observers, which cannot undo it. Opening a stored log folds it with the very same code, so a log
that loads is a log that could have been appended.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from dsh.errors import EventValidationError, LogCorruptError, SurfaceError
from dsh.events import (
    APPEND,
    EVENT_CLASS_BY_PAYLOAD,
    AssistantMessageEvent,
    Event,
    EventBase,
    KnownEvent,
    Message,
    Payload,
    RequestHeaderBody,
    RequestHeaderEvent,
    SessionEndSeed,
    SurfaceEvent,
    SurfaceOp,
    ToolResultEvent,
    UserMessageEvent,
    event_type_of,
    is_surface_event,
    model_message,
    validate_event_shape,
)
from dsh.events.codec import gc_paused
from dsh.store import EventStore, SessionHeader, SessionLog, now_millis
from dsh.surface.calibration import Calibration, calibration, credible, scaled
from dsh.surface.projection import Replacement, SurfaceProjection
from dsh.surface.tokens import message_tokens, system_tokens, tools_tokens

log = logging.getLogger("dsh.session")

Observer = Callable[[Event], None]
E = TypeVar("E", bound=EventBase)
OpenRepair = Callable[["Session"], Sequence[str]]
"""Run on a session just opened for writing; returns what it repaired, one line each."""
_open_repairs: list[OpenRepair] = []


def repair_on_open(repair: OpenRepair) -> None:
    """Have every ``Session.open(..., writable=True)`` run ``repair`` on the session before
    returning it, its lines added to the session's ``warnings`` (which every face shows once,
    as the store's own repairs at open). What only a layer above the surface can repair is
    registered by that layer (``dsh.agent``: the files an undo a killed process left half done
    made beside the workspace's files). A repair must be idempotent and cheap when there is
    nothing to repair: it runs at every open for writing. Registering one twice runs it once."""
    if repair not in _open_repairs:
        _open_repairs.append(repair)


_SURFACE_CLASSES = (UserMessageEvent, AssistantMessageEvent, ToolResultEvent)
_SURFACE_TYPES = frozenset(_SURFACE_CLASSES)


@dataclass(frozen=True, slots=True)
class Draft:
    """An event to append, before the session gives it a seq and a time."""

    payload: Payload[Any]
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool = False


@dataclass(frozen=True, slots=True)
class Measurement:
    """``measure()``: the size of the next request (docs/architecture.md, "Token accounting").
    Per-node prices come from ``Session.node_tokens``; ``calibration``: the provider's count of
    the latest request it reported against dsh's heuristic of it, which scaled every heuristic
    part of ``total_tokens`` (None: nothing to go by, the heuristic as it is)."""

    total_tokens: int
    anchored: bool
    calibration: Calibration | None = None

    def scale(self, tokens: int) -> int:
        """Heuristic ``tokens`` (what is about to be logged or sent besides the surface) as this
        measure counts them: calibrated like the rest of it."""
        return scaled(self.calibration, tokens)


class Session:
    """One session: its stored log, the live surface, and observers of new events."""

    def __init__(self, log_: SessionLog, *, clock: Callable[[], int] = now_millis) -> None:
        self._log = log_
        self._clock = clock
        self._surface = SurfaceProjection()
        self._observers: list[Observer] = []
        self._tokens: dict[int, int] = {}
        self._header_event: RequestHeaderEvent | None = None
        self._last_replace_seq = -1
        self._anchor: AssistantMessageEvent | None = None
        # Sum of node_tokens over the current nodes, kept from the first unanchored measure on
        # (None until then: opening a log prices no node). Nodes change only at the fold's edges.
        self._node_sum: int | None = None
        self._fixed: tuple[RequestHeaderEvent, int] | None = None
        # The calibration the latest usage anchor gives, by the anchor's seq (computed at the
        # first measure after it, then fixed: it depends on that request alone).
        self._calibrated: tuple[int, Calibration | None, bool] | None = None
        """The usage anchor's seq, its calibration and whether its count is ``credible``."""
        self._by_type: defaultdict[type, list[Event]] = defaultdict(list)
        apply, by_type = self._surface.apply, self._by_type
        with gc_paused():
            for event in log_.events:
                kind = type(event)
                by_type[kind].append(event)
                if kind in _SURFACE_TYPES:  # only these fold; skip the call for the rest
                    try:
                        apply(event)
                    except SurfaceError as exc:
                        raise LogCorruptError(f"session {log_.id}: {exc}", seq=exc.seq) from exc
        self._track_loaded()

    # ---- opening ----------------------------------------------------------------------------

    @classmethod
    def create(cls, store: EventStore, *, cwd: str | Path) -> Session:
        return cls(store.create(cwd=str(cwd)))

    @classmethod
    def open(cls, store: EventStore, session_id: str, *, writable: bool = False) -> Session:
        """Open a stored session; for writing (its writer lock held), after the repairs
        registered with ``repair_on_open`` ran on it. A repair that raises closes it again."""
        session = cls(store.open(session_id, writable=writable))
        if writable:
            try:
                for repair in tuple(_open_repairs):
                    session.warnings.extend(repair(session))
            except BaseException:
                session.close()
                raise
        return session

    def close(self) -> None:
        self._log.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the log ----------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._log.id

    @property
    def header(self) -> SessionHeader:
        return self._log.header

    @property
    def events(self) -> Sequence[Event]:
        return self._log.events

    @property
    def warnings(self) -> list[str]:
        return self._log.warnings

    @property
    def repaired_from(self) -> int | None:
        """The seq of the first event opening this session appended to close what a crashed
        process left open (None: none); those events were logged before anyone could observe."""
        return self._log.repaired_from

    @property
    def writable(self) -> bool:
        return self._log.writable

    @property
    def lifecycle_started(self) -> bool:
        """False while a resumed session opened for writing has written nothing yet (its
        ``session/end-seed`` is still pending): everything in the log then belongs to an earlier
        lifecycle, so a ``compaction/start`` without end there is dead, not a live lock."""
        return not self._log.pending_end_seed

    def sync(self) -> None:
        self._log.sync()

    def of_type(self, kind: type[E]) -> Sequence[E]:
        """The events of exactly type ``kind``, in log order: kept as the log loads and as
        events commit, so a reader needing a few kinds does not scan the whole log."""
        return cast(Sequence[E], self._by_type.get(kind, ()))  # keyed by exact type

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(event)`` after each commit; returns the unsubscribe function."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    def append(
        self,
        payload: Payload[E],
        *,
        surface_op: SurfaceOp | None = None,
        source_event_seqs: Sequence[int] | None = None,
        ignorable: bool = False,
    ) -> E:
        """Append one event built from its payload; surface payloads default to ``append``.
        The result is the payload's own event class (``TurnStart`` -> ``TurnStartEvent``)."""
        sources = tuple(source_event_seqs) if source_event_seqs is not None else None
        event = self.append_many([Draft(payload, surface_op, sources, ignorable)])[-1]
        return cast(E, event)  # built from EVENT_CLASS_BY_PAYLOAD, the runtime twin of E

    def append_many(self, drafts: Sequence[Draft]) -> list[KnownEvent]:
        """Append several events as one write: all are committed, or none."""
        batch: list[Draft] = list(drafts)
        if self._log.pending_end_seed and batch:
            batch.insert(0, Draft(SessionEndSeed()))
        now = self._clock()
        events = [self._build(draft, len(self.events) + i, now) for i, draft in enumerate(batch)]
        undos = []
        try:
            for event in events:
                validate_event_shape(event)
                undo = self._surface.apply(event)
                if undo is not None and is_surface_event(event):
                    undos.append((undo, event))
            self._log.append(events, validated=True)
        except BaseException:
            for undo, surface_event in reversed(undos):
                self._surface.undo(undo, surface_event)
            raise
        for event in events:
            self._by_type[type(event)].append(event)
            self._track(event)
            for observer in list(self._observers):
                try:
                    observer(event)
                except Exception:  # an observer cannot undo a commit
                    log.exception("session observer failed on seq %d", event.seq)
        return events

    def catch_up(self, events: Sequence[Event]) -> None:
        """Fold in ``events`` that another process appended to this read-only session's stored
        log since it was read (``dsh.store.appended`` reads them on, checked as a load checks
        them), with the code a load folds with: the session then holds what a fresh load of
        the longer log would. All or nothing: an event the surface refuses raises
        ``LogCorruptError`` (as the load would) and leaves the session as it was. Observers are
        not told: they hear this process's appends."""
        self._log.check_caught_up(events)  # before the surface sees any of them
        undos = []
        try:
            for event in events:
                if type(event) in _SURFACE_TYPES:
                    undo = self._surface.apply(event)
                    if undo is not None:
                        undos.append((undo, cast(SurfaceEvent, event)))
            self._log.catch_up(events)
        except BaseException as exc:
            for undo, surface_event in reversed(undos):
                self._surface.undo(undo, surface_event)
            if isinstance(exc, SurfaceError):
                raise LogCorruptError(f"session {self.id}: {exc}", seq=exc.seq) from exc
            raise
        for event in events:
            self._by_type[type(event)].append(event)
            self._track(event)

    def _build(self, draft: Draft, seq: int, now: int) -> KnownEvent:
        cls = EVENT_CLASS_BY_PAYLOAD.get(type(draft.payload))
        if cls is None:
            raise EventValidationError(
                f"{type(draft.payload).__name__} is not an event payload", seq=seq
            )
        fields: dict[str, Any] = {"seq": seq, "time": now, "data": draft.payload}
        if draft.ignorable:
            fields["ignorable"] = True
        if issubclass(cls, _SURFACE_CLASSES):
            fields["surface_op"] = draft.surface_op if draft.surface_op is not None else APPEND
            fields["source_event_seqs"] = draft.source_event_seqs
        elif draft.surface_op is not None or draft.source_event_seqs is not None:
            raise EventValidationError(
                f"event seq {seq}: only surface events may carry surfaceOp or sourceEventSeqs",
                seq=seq,
            )
        return cls(**fields)

    def _track(self, event: Event) -> None:
        """Remember what ``measure`` needs: the latest header, replace and usage anchor."""
        if isinstance(event, RequestHeaderEvent):
            self._header_event = event
        elif is_surface_event(event):
            op = event.surface_op
            if self._node_sum is not None:
                self._node_sum += self._priced_change(event.seq, op == APPEND)
            if op != APPEND:
                self._last_replace_seq = event.seq
            elif (
                isinstance(event, AssistantMessageEvent)
                and event.data.usage is not None
                and not event.data.interrupted
            ):
                self._anchor = event

    def _track_loaded(self) -> None:
        """What ``_track`` would have remembered over the loaded log, from its last events."""
        headers = self.of_type(RequestHeaderEvent)
        self._header_event = headers[-1] if headers else None
        replacements = self._surface.replacements
        self._last_replace_seq = replacements[-1].seq if replacements else -1
        for event in reversed(self.of_type(AssistantMessageEvent)):
            data = event.data
            if event.surface_op == APPEND and data.usage is not None and not data.interrupted:
                self._anchor = event
                break

    def _priced_change(self, seq: int, appended: bool) -> int:
        """How the committed surface event ``seq`` changed the sum of node prices."""
        change = self.node_tokens(seq)
        if not appended:
            replacements = self._surface.replacements
            index = len(replacements) - 1
            while replacements[index].seq != seq:  # a batch may hold later replaces
                index -= 1
            change -= sum(self.node_tokens(old) for old in replacements[index].shadowed_seqs)
        return change

    # ---- the surface ------------------------------------------------------------------------

    @property
    def surface(self) -> SurfaceProjection:
        return self._surface

    @property
    def nodes(self) -> list[int]:
        """Seqs of the current surface nodes, in model order."""
        return self._surface.nodes

    @property
    def replace_generation(self) -> int:
        return self._surface.replace_generation

    @property
    def replacements(self) -> list[Replacement]:
        return self._surface.replacements

    @property
    def request_header(self) -> RequestHeaderBody | None:
        """The latest logged request header (system, tools, config), if any."""
        return self._header_event.data.header if self._header_event is not None else None

    def derive_messages(self) -> list[Message]:
        """The model's messages: the current nodes in order, empty assistant messages skipped."""
        return self._surface.messages()

    def tool_pairing_balanced_before(self, seq: int) -> bool:
        """True iff no tool call is open just before node ``seq``."""
        position = self._surface.position(seq)
        return position == 0 or self._surface.pairing_balance_after(position - 1) == 0

    def tool_pairing_balanced_after(self, seq: int) -> bool:
        """True iff no tool call is open just after node ``seq``."""
        return self._surface.pairing_balance_after(self._surface.position(seq)) == 0

    def node(self, seq: int) -> SurfaceEvent:
        """The surface event ``seq``: a current node, or one a replace has shadowed."""
        event = self._log.events[seq]
        if not is_surface_event(event):
            raise SurfaceError(f"seq {seq} is {event_type_of(event)}, not a surface event", seq=seq)
        return event

    def node_message(self, seq: int) -> Message | None:
        """The message event ``seq`` contributes to the model: None for an empty assistant
        message, and for an event that is not a surface event."""
        event = self._log.events[seq]
        return model_message(event) if is_surface_event(event) else None

    def node_tokens(self, seq: int) -> int:
        """Heuristic price of one surface event's message (0 for an empty assistant message)."""
        cached = self._tokens.get(seq)
        if cached is None:
            message = self.node_message(seq)
            cached = 0 if message is None else message_tokens(message)
            self._tokens[seq] = cached
        return cached

    def measure(self) -> Measurement:
        """Size of the next request: a provider anchor if one still applies, else the heuristic;
        what the provider did not count scaled by the session's ``calibration()``.

        Costs O(nodes after the anchor) when anchored; the node sum (which unanchored measures
        and the calibration read) is computed once and then kept as events commit, so no path
        walks the whole surface per call."""
        calibrated = self.calibration()
        anchor = self._anchor
        if (
            anchor is not None
            and anchor.data.usage is not None
            and self._anchor_credible()
            and anchor.seq > self._last_replace_seq
            and (self._header_event is None or self._header_event.seq < anchor.seq)
            and anchor.seq in self._surface
        ):
            nodes = self._surface.nodes
            later = sum(
                self.node_tokens(nodes[i])
                for i in range(self._surface.position(anchor.seq), len(nodes))
            )
            real = anchor.data.usage.request_tokens()
            return Measurement(real + scaled(calibrated, later), True, calibrated)
        heuristic = self._fixed_tokens() + self._current_node_sum()
        return Measurement(scaled(calibrated, heuristic), False, calibrated)

    def calibration(self) -> Calibration | None:
        """The provider's count of the latest request it reported (the newest appended
        ``assistant/message`` with usage, not interrupted: the usage anchor, whether or not it
        still applies) against dsh's heuristic of that request; None without one, or when
        ``dsh.surface.calibration`` finds it too small to go by."""
        anchor = self._anchor
        if anchor is None or anchor.data.usage is None:
            return None
        return self._judged(anchor)[1]

    def _anchor_credible(self) -> bool:
        """Whether the usage anchor's count can be its request's size (``credible``): a count a
        tokenizer could not give is not used as the context's size, so a server that reports
        too little never hides a full window from the pressure check."""
        anchor = self._anchor
        return anchor is not None and anchor.data.usage is not None and self._judged(anchor)[2]

    def _judged(self, anchor: AssistantMessageEvent) -> tuple[int, Calibration | None, bool]:
        cached = self._calibrated
        if cached is None or cached[0] != anchor.seq:
            assert anchor.data.usage is not None
            reported = anchor.data.usage.request_tokens()
            estimated = self._request_estimate(anchor)
            cached = (
                anchor.seq,
                calibration(anchor.seq, reported, estimated),
                credible(reported, estimated),
            )
            self._calibrated = cached
        return cached

    def _request_estimate(self, anchor: AssistantMessageEvent) -> int:
        """The heuristic of the request ``anchor`` answered: the latest header before it and
        the nodes the surface held then. Those are the current nodes older than the anchor plus
        the older ones a replace since has shadowed (a shadowed node never comes back, and no
        node older than the anchor joins after it); so this costs what came after the anchor."""
        surface = self._surface
        newer = sum(
            self.node_tokens(seq) for seq in range(anchor.seq, len(self.events)) if seq in surface
        )
        shadowed = 0
        for replacement in reversed(surface.replacements):
            if replacement.seq < anchor.seq:
                break
            shadowed += sum(
                self.node_tokens(seq) for seq in replacement.shadowed_seqs if seq < anchor.seq
            )
        header = self._header_before(anchor.seq)
        return header + self._current_node_sum() - newer + shadowed

    def _header_before(self, seq: int) -> int:
        """The system prompt and tools of the latest header logged before ``seq``, priced."""
        for header_event in reversed(self.of_type(RequestHeaderEvent)):
            if header_event.seq < seq:
                if header_event is self._header_event:
                    return self._fixed_tokens()
                header = header_event.data.header
                return system_tokens(header.system) + tools_tokens(header.tools)
        return 0

    def _current_node_sum(self) -> int:
        """The sum of ``node_tokens`` over the current nodes: summed once, then kept."""
        if self._node_sum is None:
            self._node_sum = sum(self.node_tokens(seq) for seq in self._surface.nodes)
        return self._node_sum

    def _fixed_tokens(self) -> int:
        """System prompt and tool schemas of the latest header, priced once per header."""
        header_event = self._header_event
        if header_event is None:
            return 0
        if self._fixed is None or self._fixed[0] is not header_event:
            header = header_event.data.header
            self._fixed = (header_event, system_tokens(header.system) + tools_tokens(header.tools))
        return self._fixed[1]
