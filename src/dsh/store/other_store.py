"""A session the configured store does not hold, looked for in the other file store.

Both file stores live under the same dsh home (JSONL in ``sessions/``, SQLite in
``dsh.sqlite3``) and ``store.backend`` picks one, so after ``dsh sessions migrate`` (or with the
setting changed) a session can be stored, whole, where the configured store does not look.
``resolve_session_id`` (what every face resolves a given id or prefix with) then does not just
say "no session": it names the store that has it and how to reach it, as the listing's footer
names the sessions kept there (in a line short enough not to be cut: without the path). The
other store is looked in only once the configured one has no match, so a found session costs
nothing more.
"""

from __future__ import annotations

from dsh.errors import DshError, SessionNotFoundError
from dsh.store import base
from dsh.store.base import EventStore
from dsh.store.jsonl import JsonlStore
from dsh.store.sqlite import SqliteStore


def backend_name(store: JsonlStore | SqliteStore) -> str:
    """The ``store.backend`` value that selects ``store``."""
    return "sqlite" if isinstance(store, SqliteStore) else "jsonl"


def other_store(store: EventStore) -> JsonlStore | SqliteStore | None:
    """The file store under the same home that ``store`` is not (None for a memory store)."""
    if isinstance(store, SqliteStore):
        return JsonlStore(store.home)
    if isinstance(store, JsonlStore):
        return SqliteStore(store.home)
    return None


def resolve_session_id(store: EventStore, wanted: str) -> str:
    """``dsh.store.base.resolve_session_id`` in ``store``; when it has no such session but the
    other store does, the ``SessionNotFoundError`` says so and how to reach it."""
    try:
        return base.resolve_session_id(store, wanted)
    except SessionNotFoundError as exc:
        elsewhere = found_elsewhere(store, wanted)
        if elsewhere is None:
            raise
        raise SessionNotFoundError(elsewhere) from exc


def found_elsewhere(store: EventStore, wanted: str) -> str | None:
    """What to say of ``wanted`` when the other store holds it (None when it does not, or
    cannot be read: the configured store's "no session" stands)."""
    other = other_store(store)
    if other is None or not isinstance(store, JsonlStore | SqliteStore):
        return None
    try:
        found = base.resolve_session_id(other, wanted)
    except DshError:  # not there, ambiguous there, or a store not in use that does not read
        return None
    here, there = backend_name(store), backend_name(other)
    return (
        f"no session {wanted!r} in the {here} store; the {there} store has session {found} "
        f"(same dsh home): use `DSH_STORE_BACKEND={there} dsh …`, or move its sessions here "
        f"with `dsh sessions migrate --to {here}`"
    )
