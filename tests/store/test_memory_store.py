"""The in-memory store: the shared contract, plus keeping bytes rather than objects."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.errors import SessionNotFoundError
from dsh.events import encode_event
from dsh.store import MemoryStore
from tests.contracts.store_contract import StoreContract
from tests.helpers import append_chat_turn, new_session


class TestMemoryStore(StoreContract):
    def make_store(self, tmp_path: Path) -> MemoryStore:
        return MemoryStore()

    def reopen_store(self, store: MemoryStore) -> MemoryStore:
        return store  # memory has no storage beyond the object

    def stored_event_bytes(self, store: MemoryStore, session_id: str) -> list[bytes]:
        return list(store.lines[session_id])

    def replace_stored_event(
        self, store: MemoryStore, session_id: str, seq: int, raw: bytes
    ) -> None:
        store.lines[session_id][seq] = raw

    def drop_stored_event(self, store: MemoryStore, session_id: str, seq: int) -> None:
        del store.lines[session_id][seq]

    def position_label(self, seq: int) -> str:
        return f"line {seq}"  # the lines list is indexed from 0, so line N holds seq N


def test_memory_store_keeps_encoded_bytes_so_every_open_decodes_afresh():
    store = MemoryStore()
    with new_session(store) as session:
        append_chat_turn(session)
    assert store.lines[session.id] == [encode_event(e) for e in session.events]
    first, second = store.open(session.id), store.open(session.id)
    assert list(first.events) == list(second.events) == list(session.events)
    assert first.events[0] is not second.events[0]


def test_memory_stores_do_not_share_sessions():
    store = MemoryStore()
    with new_session(store) as session:
        append_chat_turn(session)
    with pytest.raises(SessionNotFoundError):
        MemoryStore().open(session.id)
