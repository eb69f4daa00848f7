"""The summaries behind every list of sessions (``dsh sessions list``, the TUI's ``/sessions``
picker, ``dsh --resume`` without an id, the web's session list), kept up to date at the cost of
what was appended.

Each session's figures come from the summary cache (``dsh.transcript.summary_cache``), brought
up to date with the events appended since the position it covers (``dsh.store.appended``): a
repeat listing costs the sessions' headers and a stat each, plus the new events. A log that
changed other than by appends is read again from its start; a session that cannot be read that
way is loaded as a whole, as before the cache, so its summary (or the reason it is unreadable)
is the load's. A listing of every session drops the cache entries of sessions that are gone.
Stores without positions (``MemoryStore``) are read whole every time.
"""

from __future__ import annotations

from collections.abc import Iterable

from dsh.errors import DshError, LogCorruptError, UnknownEventTypeError
from dsh.store import EventStore, SessionHeader, SqliteStore
from dsh.store.appended import AppendedReader, reader_for
from dsh.store.base import UnreadableSession
from dsh.store.derived import summary_cache_path
from dsh.transcript.summary_cache import CachedSummary, load_cache, save_cache
from dsh.transcript.titles import (
    TITLE_CHARS,
    SessionSummary,
    SummaryFold,
    summarize,
    trim_title,
)


def session_summaries(
    store: EventStore,
    headers: Iterable[SessionHeader] | None = None,
    *,
    title_chars: int = TITLE_CHARS,
    every_session: bool = False,
) -> list[SessionSummary]:
    """Summaries of ``headers`` (default: every stored session), read without the writer lock,
    titles cut at ``title_chars`` (at most ``WIDEST_TITLE_CHARS``); a session that cannot be
    read is summarised from its header alone, titled by the reason. When every stored session
    is listed (no ``headers``, or ``every_session``: they are all of them), the cache forgets
    the sessions that are gone."""
    listed = store.list() if headers is None else list(headers)
    reader = reader_for(store)
    if reader is None:
        return [read_whole(store, header, title_chars) for header in listed]
    backend = "sqlite" if isinstance(reader.store, SqliteStore) else "jsonl"
    path = summary_cache_path(reader.store.home, backend)
    cached = load_cache(path)
    with reader:
        summaries, kept = _bring_up_to_date(store, reader, listed, cached, title_chars)
    if headers is None or every_session:  # forget the sessions that are gone
        kept = {header.id: kept[header.id] for header in listed if header.id in kept}
    if kept != cached:
        save_cache(path, kept)
    return summaries


def _bring_up_to_date(
    store: EventStore,
    reader: AppendedReader,
    listed: list[SessionHeader],
    cached: dict[str, CachedSummary],
    title_chars: int,
) -> tuple[list[SessionSummary], dict[str, CachedSummary]]:
    """Each listed session's summary, and the cache entries as they now stand."""
    kept = dict(cached)
    summaries: list[SessionSummary] = []
    for header in listed:
        entry = kept.pop(header.id, None)
        fold = SummaryFold() if entry is None else entry.fold
        try:
            position = reader.read(header, None if entry is None else entry.position, fold)
        except (DshError, OSError):
            summaries.append(read_whole(store, header, title_chars))
            continue
        if entry is not None and position == entry.position:
            kept[header.id] = entry  # nothing was read: the same figures
        else:
            kept[header.id] = CachedSummary(position=position, fold=fold)
        summaries.append(fold.summary(header, title_chars))
    return summaries, kept


def read_whole(
    store: EventStore, header: SessionHeader, title_chars: int = TITLE_CHARS
) -> SessionSummary:
    """The summary of one session from its whole log, loaded as ``open`` loads it."""
    try:
        log = store.open(header.id)
    except DshError as exc:
        reason = without_path(str(exc), store, header.id)
        # a newer dsh's log is not damaged: repair would drop what this version cannot read
        newer = isinstance(exc, UnknownEventTypeError)
        line = exc.line if isinstance(exc, LogCorruptError) else None
        why = UnreadableSession(header.id, reason, line, repairable=not newer)
        prefix = NEWER if newer else UNREADABLE
        title = f"{prefix}{closed(trim_title(reason, 40))})"
        return summarize(header, [], title=title, unreadable=why)
    try:
        return summarize(header, log.events, title_chars=title_chars)
    finally:
        log.close()


def closed(text: str) -> str:
    """``text`` with a bracket its cut left open closed after it: a reason cut inside its own
    bracket (``checksum mismatch (stored 2625c…``) still reads as one bracketed title."""
    depth = 0
    for character in text:
        if character == "(":
            depth += 1
        elif character == ")" and depth:
            depth -= 1
    return text + ")" * depth


def without_path(reason: str, store: EventStore, session_id: str) -> str:
    """``reason`` without the log's path or the session's id in front (a listing row names the
    session already): what is wrong is what fits in the row. SQLite names its database file and
    then the session (``<path>: session <id>: ``), or the session alone."""
    log_path = getattr(store, "log_path", None)
    if log_path is not None:
        return reason.removeprefix(f"{log_path(session_id)}: ")
    if isinstance(store, SqliteStore):
        reason = reason.removeprefix(f"{store.path}: ")
        return reason.removeprefix(f"session {session_id}: ")
    return reason


UNREADABLE = "(unreadable: "
"""How the title of a session whose log does not load begins."""
NEWER = "(needs a newer dsh: "
"""How the title of a session written by a newer dsh (an event type this one lacks) begins."""


def is_unreadable(summary: SessionSummary) -> bool:
    """The session's log did not load (damaged, or written by a newer dsh): its title says
    why, cut, and ``summary.unreadable`` in full."""
    return summary.unreadable is not None
