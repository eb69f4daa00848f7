"""The contract every session store must pass: both stores pass one suite (docs/architecture.md,
"Decisions, with the reason", the SQLite item).

A backend's test module subclasses :class:`StoreContract` (``class TestJsonlStore(StoreContract)``)
and implements the hooks that reach under the store to its stored bytes.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path

import pytest

from dsh.errors import (
    EventValidationError,
    LogCorruptError,
    ReadOnlySessionError,
    SessionLockedError,
    SessionNotFoundError,
    StoreError,
    UnknownEventTypeError,
)
from dsh.events import (
    AssistantMessage,
    AssistantMessageEvent,
    CompactionSummaryEvent,
    OpaqueEvent,
    SessionEndSeedEvent,
    StepEndEvent,
    StepStart,
    ToolCall,
    ToolResultBlock,
    ToolResultEvent,
    TurnEndEvent,
    TurnStart,
    TurnStartEvent,
    decode_events,
    encode_event,
    is_checkpoint_event,
)
from dsh.store import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, EventStore
from dsh.store.locking import recorded_holder
from dsh.surface import Session, fold_surface
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    fixed_clock,
    new_session,
    tool_call_block,
    user_message,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"


class StoreContract(ABC):
    """Tests every store must pass. Not collected itself (no ``Test`` prefix)."""

    # ---- hooks ------------------------------------------------------------------------------

    @abstractmethod
    def make_store(self, tmp_path: Path) -> EventStore:
        """A new, empty store."""

    @abstractmethod
    def reopen_store(self, store: EventStore) -> EventStore:
        """A fresh store object on the same storage (the same object for memory)."""

    @abstractmethod
    def stored_event_bytes(self, store: EventStore, session_id: str) -> list[bytes]:
        """The stored bytes of every event of a session, in seq order (no newlines)."""

    @abstractmethod
    def replace_stored_event(
        self, store: EventStore, session_id: str, seq: int, raw: bytes
    ) -> None:
        """Overwrite the stored bytes of one event."""

    @abstractmethod
    def drop_stored_event(self, store: EventStore, session_id: str, seq: int) -> None:
        """Delete one stored event, leaving a gap in the seqs."""

    @abstractmethod
    def position_label(self, seq: int) -> str:
        """How this backend's errors name where the event of ``seq`` is stored
        (``"line 5"`` in a JSONL file, ``"seq 3"`` in a database row)."""

    def install_fixture(self, store: EventStore, path: Path) -> str:
        """Put a recorded JSONL log into the store; returns its session id."""
        lines = path.read_bytes().splitlines()
        log = store.create(cwd="/work/project", seed=decode_events(lines[1:], first_line=2))
        log.close()
        return log.id

    # ---- shared setup -----------------------------------------------------------------------

    @pytest.fixture
    def store(self, tmp_path: Path) -> EventStore:
        return self.make_store(tmp_path)

    def closed_session(self, store: EventStore) -> str:
        """A session with a chat turn and a tool turn, closed; returns its id."""
        with new_session(store) as session:
            append_chat_turn(session)
            append_tool_turn(session)
        return session.id

    def crashed_session(self, store: EventStore) -> tuple[str, dict[str, int]]:
        """A session whose last turn is open: the model asked for two parallel calls, only the
        first was started (``tool/call``) and neither answered, then the process died."""
        session = new_session(store)
        append_chat_turn(session)
        seqs = {"turn_start": session.append(TurnStart(turn=2)).seq}
        session.append(StepStart(turn=2, step=1))
        session.append(user_message("read both files"))
        first = tool_call_block("call-a", "read_file", '{"path":"a.txt"}')
        second = tool_call_block("call-b", "read_file", '{"path":"b.txt"}')
        seqs["assistant"] = session.append(
            AssistantMessage(turn=2, step=1, message=assistant_message(tool_calls=[first, second]))
        ).seq
        seqs["call_a"] = session.append(
            ToolCall(turn=2, step=1, call_id="call-a", name="read_file", arguments=first.arguments)
        ).seq
        # A crash drops the lock with the process; closing writes nothing and does the same.
        session.close()
        return session.id, seqs

    # ---- round trip -------------------------------------------------------------------------

    def test_created_session_reopens_with_equal_header_and_events(self, store):
        with new_session(store) as session:
            append_chat_turn(session)
            append_tool_turn(session, calls=[("grep", '{"q":"x"}', "1 match"), ("ls", "{}", "a")])
            written = list(session.events)
            header = session.header
        log = self.reopen_store(store).open(session.id)
        assert log.header == header
        assert list(log.events) == written
        log.close()

    def test_resaving_a_loaded_log_gives_identical_bytes(self, store):
        session_id = self.closed_session(store)
        log = self.reopen_store(store).open(session_id)
        assert [encode_event(e) for e in log.events] == self.stored_event_bytes(store, session_id)
        log.close()

    def test_create_with_seed_stores_the_seed_events(self, store):
        with new_session(store) as source:
            append_chat_turn(source)
        seeded = store.create(cwd="/elsewhere", seed=list(source.events))
        seeded.close()
        assert self.stored_event_bytes(store, seeded.id) == [encode_event(e) for e in source.events]

    def test_create_with_a_chosen_id_and_creation_time_refuses_an_existing_id(self, store):
        log = store.create(cwd="/imported", session_id="imported-1", created_at=1_700_000_000_000)
        log.close()
        header = self.reopen_store(store).open("imported-1").header
        assert (header.id, header.created_at) == ("imported-1", 1_700_000_000_000)
        with pytest.raises(StoreError):
            store.create(cwd="/imported", session_id="imported-1")
        assert [h.id for h in self.reopen_store(store).list()].count("imported-1") == 1

    def test_append_with_a_seq_that_does_not_continue_the_log_is_refused(self, store):
        log = store.create(cwd="/work/project")
        append_chat_turn(Session(log, clock=fixed_clock))
        with pytest.raises(EventValidationError, match="seq 0 appended where seq 6"):
            log.append([log.events[0]])
        log.close()
        assert len(self.stored_event_bytes(store, log.id)) == 6

    # ---- what a reader refuses or keeps -----------------------------------------------------

    def test_unknown_event_type_without_ignorable_refuses_the_load_naming_type_and_seq(self, store):
        session_id = self.closed_session(store)
        self.replace_stored_event(
            store, session_id, 3, b'{"type":"future/thing","seq":3,"time":5,"data":{}}'
        )
        with pytest.raises(UnknownEventTypeError) as caught:
            self.reopen_store(store).open(session_id)
        assert caught.value.event_type == "future/thing"
        assert caught.value.seq == 3
        assert "'future/thing'" in str(caught.value)
        assert "seq 3" in str(caught.value)

    def test_ignorable_unknown_event_loads_as_opaque_keeps_its_seq_and_resaves_unchanged(
        self, store
    ):
        session_id = self.closed_session(store)
        # Odd spacing, key order and number spelling: only a byte copy re-saves this unchanged.
        raw = b'{"type":"future/note", "seq":3,"time":7,"ignorable":true,"data":{"z":1.50,"a":[]}}'
        self.replace_stored_event(store, session_id, 3, raw)

        log = self.reopen_store(store).open(session_id)
        opaque = log.events[3]
        assert isinstance(opaque, OpaqueEvent)
        assert (opaque.type, opaque.seq, opaque.time) == ("future/note", 3, 7)
        assert encode_event(opaque) == raw
        assert [encode_event(e) for e in log.events] == self.stored_event_bytes(store, session_id)
        log.close()

        # A writer that appends after it keeps the opaque event's bytes as they were.
        with Session.open(self.reopen_store(store), session_id, writable=True) as session:
            assert 3 not in session.nodes
            append_chat_turn(session)
        assert self.stored_event_bytes(store, session_id)[3] == raw

    def test_gap_in_seq_refuses_the_load_naming_the_seq(self, store):
        session_id = self.closed_session(store)
        self.drop_stored_event(store, session_id, 2)
        with pytest.raises(LogCorruptError) as caught:
            self.reopen_store(store).open(session_id)
        assert "expected seq 2" in str(caught.value)
        assert caught.value.seq == 3

    def test_garbage_json_in_the_middle_refuses_the_load_naming_its_position(self, store):
        session_id = self.closed_session(store)
        self.replace_stored_event(store, session_id, 4, b'{"type": "user/mess')
        with pytest.raises(LogCorruptError) as caught:
            self.reopen_store(store).open(session_id)
        assert not isinstance(caught.value, UnknownEventTypeError)
        assert self.position_label(4) in str(caught.value)

    def test_known_event_with_a_malformed_payload_refuses_the_load(self, store):
        session_id = self.closed_session(store)
        self.replace_stored_event(
            store, session_id, 0, b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":"one"}}'
        )
        with pytest.raises(LogCorruptError) as caught:
            self.reopen_store(store).open(session_id)
        assert "turn/start" in str(caught.value)

    # ---- one writer, many readers -----------------------------------------------------------

    def test_second_writable_open_is_refused_naming_the_holder_pid(self, store):
        with new_session(store) as session:
            append_chat_turn(session)
            with pytest.raises(SessionLockedError) as caught:
                self.reopen_store(store).open(session.id, writable=True)
            assert caught.value.holder_pid == os.getpid()
            assert str(os.getpid()) in str(caught.value)
        # The lock goes with the holder.
        self.reopen_store(store).open(session.id, writable=True).close()

    def test_the_lock_file_a_store_names_records_the_writer_while_it_writes(self, store):
        """``lock_path`` (a store with files has one) is where a reader in another process,
        the web's session list say, finds who writes the session: the holder's pid while it
        holds the session, none once it let go."""
        lock_path = getattr(store, "lock_path", None)
        if lock_path is None:
            pytest.skip("a store without files has no lock file")
        with new_session(store) as session:
            assert recorded_holder(lock_path(session.id))[0] == os.getpid()
        assert recorded_holder(lock_path(session.id)) == (None, "")

    def test_read_only_open_does_not_block_while_a_writer_holds_the_session(self, store):
        with new_session(store) as session:
            append_chat_turn(session)
            reader = self.reopen_store(store).open(session.id)
            assert not reader.writable
            assert list(reader.events) == list(session.events)
            reader.close()
            append_chat_turn(session)  # the writer is unaffected by the reader
        assert len(self.stored_event_bytes(store, session.id)) == 12

    def test_read_only_open_never_writes(self, store):
        session_id = self.closed_session(store)
        before = self.stored_event_bytes(store, session_id)
        log = self.reopen_store(store).open(session_id)
        Session(log).derive_messages()
        log.close()
        assert self.stored_event_bytes(store, session_id) == before

    def test_append_on_a_read_only_log_raises_and_changes_nothing(self, store):
        session_id = self.closed_session(store)
        before = self.stored_event_bytes(store, session_id)
        session = Session.open(self.reopen_store(store), session_id)
        nodes = list(session.nodes)
        with pytest.raises(ReadOnlySessionError):
            session.append(TurnStart(turn=3))
        with pytest.raises(ReadOnlySessionError):
            session.append(user_message("too late"))
        assert session.nodes == nodes
        assert len(session.events) == len(before)
        session.close()
        assert self.stored_event_bytes(store, session_id) == before

    # ---- crash repair and resumed lifecycles ------------------------------------------------

    def test_crash_repair_closes_the_open_trailing_turn_on_writable_open(self, store):
        session_id, seqs = self.crashed_session(store)
        crashed_length = seqs["call_a"] + 1
        session = Session.open(self.reopen_store(store), session_id, writable=True)
        repairs = list(session.events[crashed_length:])
        assert [type(e) for e in repairs] == [
            SessionEndSeedEvent,
            ToolResultEvent,
            ToolResultEvent,
            StepEndEvent,
            TurnEndEvent,
        ]
        started, not_started = repairs[1], repairs[2]
        assert isinstance(started, ToolResultEvent) and isinstance(not_started, ToolResultEvent)
        assert started.data.error is not None and started.data.error.code == TOOL_OUTCOME_UNKNOWN
        assert started.source_event_seqs == (seqs["call_a"],)
        first_block = started.data.message.content[0]
        assert isinstance(first_block, ToolResultBlock)
        assert (first_block.tool_call_id, first_block.is_error) == ("call-a", True)
        assert not_started.data.error is not None
        assert not_started.data.error.code == TOOL_NOT_STARTED
        second_block = not_started.data.message.content[0]
        assert isinstance(second_block, ToolResultBlock)
        assert (second_block.tool_call_id, second_block.is_error) == ("call-b", True)
        assert (repairs[3].data.turn, repairs[3].data.step) == (2, 1)
        assert repairs[4].data.turn == 2
        assert repairs[4].data.reason.kind == "interrupted"
        assert session.tool_pairing_balanced_after(session.nodes[-1])
        assert session.tool_pairing_balanced_before(seqs["assistant"])
        assert not session.tool_pairing_balanced_after(seqs["assistant"])
        session.close()
        # The repair is stored, not only held in memory, and is not repeated on the next open.
        stored = self.stored_event_bytes(store, session_id)
        assert stored[crashed_length:] == [encode_event(e) for e in repairs]
        self.reopen_store(store).open(session_id, writable=True).close()
        assert self.stored_event_bytes(store, session_id) == stored

    def test_read_only_open_of_a_crashed_session_writes_nothing(self, store):
        session_id, seqs = self.crashed_session(store)
        before = self.stored_event_bytes(store, session_id)
        log = self.reopen_store(store).open(session_id)
        assert len(log.events) == seqs["call_a"] + 1
        assert not isinstance(log.events[-1], TurnEndEvent)
        log.close()
        assert self.stored_event_bytes(store, session_id) == before

    def test_resumed_session_writes_end_seed_lazily_before_its_first_append(self, store):
        session_id = self.closed_session(store)
        before = self.stored_event_bytes(store, session_id)
        # Opened for writing and closed without appending: nothing is written.
        Session.open(self.reopen_store(store), session_id, writable=True).close()
        assert self.stored_event_bytes(store, session_id) == before

        session = Session(
            self.reopen_store(store).open(session_id, writable=True), clock=fixed_clock
        )
        appended = session.append(TurnStart(turn=3))
        assert isinstance(appended, TurnStartEvent)
        assert appended.seq == len(before) + 1
        assert isinstance(session.events[len(before)], SessionEndSeedEvent)
        session.append(StepStart(turn=3, step=1))  # only the first append brings an end-seed
        session.close()
        stored = self.stored_event_bytes(store, session_id)
        assert len(stored) == len(before) + 3
        assert b'"type":"session/end-seed"' in stored[len(before)]
        assert sum(b"session/end-seed" in line for line in stored) == 1

    def test_forked_session_writes_end_seed_lazily_after_its_seed(self, store):
        with new_session(store) as parent:
            append_chat_turn(parent)
        seed = list(parent.events)
        fork = Session(
            store.create(cwd="/work/fork", parent_session=parent.id, seed=seed),
            clock=fixed_clock,
        )
        assert (fork.header.parent_session, fork.header.seed_length) == (parent.id, len(seed))
        assert self.stored_event_bytes(store, fork.id) == [encode_event(e) for e in seed]
        appended = fork.append(TurnStart(turn=2))
        assert isinstance(fork.events[len(seed)], SessionEndSeedEvent)
        assert appended.seq == len(seed) + 1
        fork.append(StepStart(turn=2, step=1))
        fork.close()
        assert len(self.stored_event_bytes(store, fork.id)) == len(seed) + 3
        assert self.stored_event_bytes(store, parent.id) == [encode_event(e) for e in seed]

    def test_a_new_session_writes_no_end_seed(self, store):
        with new_session(store) as session:
            first = session.append(TurnStart(turn=1))
        assert first.seq == 0
        assert len(self.stored_event_bytes(store, session.id)) == 1

    # ---- catalogue --------------------------------------------------------------------------

    def test_list_returns_the_headers_of_created_sessions(self, store):
        assert self.reopen_store(store).list() == []
        headers = []
        for cwd in ("/a", "/b", "/c"):
            log = store.create(cwd=cwd)
            headers.append(log.header)
            log.close()
        listed = self.reopen_store(store).list()
        assert sorted(listed, key=lambda h: h.id) == sorted(headers, key=lambda h: h.id)
        assert [h.created_at for h in listed] == sorted(h.created_at for h in listed)

    def test_list_is_oldest_first_by_creation_time_whatever_the_ids(self, store):
        """An imported session keeps its creation time and may be given any id (``--id aaa``):
        the list is in creation order (ties by id), not in id order."""
        made = [("zzz-oldest", 1_000), ("aaa-newest", 3_000), ("mmm-middle", 2_000)]
        made += [("b-tie", 2_000)]
        for session_id, created_at in made:
            store.create(cwd="/w", session_id=session_id, created_at=created_at).close()
        listed = [h.id for h in self.reopen_store(store).list()]
        assert listed == ["zzz-oldest", "b-tie", "mmm-middle", "aaa-newest"]

    def test_header_of_one_session_is_what_the_listing_says_of_it(self, store):
        assert self.reopen_store(store).header_of("20260101-000000-000-000000") is None
        made = [self.closed_session(store) for _ in range(3)]
        reopened = self.reopen_store(store)
        for header in reopened.list():
            assert reopened.header_of(header.id) == header
        assert {h.id for h in reopened.list()} == set(made)
        for other in (made[0][:-1], made[0] + "x", "", ".", "..", f"{made[0]}/..", "a\x00b"):
            assert reopened.header_of(other) is None  # no prefix, no path: that id or nothing

    def test_open_of_an_unknown_id_raises_session_not_found(self, store):
        with pytest.raises(SessionNotFoundError):
            store.open("20260101-000000-000-000000")
        self.closed_session(store)
        with pytest.raises(SessionNotFoundError, match="no-such-session"):
            self.reopen_store(store).open("no-such-session", writable=True)

    # ---- recorded fixture -------------------------------------------------------------------

    def test_compaction_fixture_loads_with_the_checkpoint_in_place_of_its_range(self, store):
        session_id = self.install_fixture(store, FIXTURES / "compaction-basic.jsonl")
        session = Session.open(self.reopen_store(store), session_id)
        summary = next(e for e in session.events if isinstance(e, CompactionSummaryEvent))
        checkpoint = session.events[summary.seq + 1]
        assert is_checkpoint_event(checkpoint)
        shadowed = summary.data.shadowed_seqs
        assert shadowed == (2, 4, 6, 9)
        assert session.replace_generation == 1
        assert [r.shadowed_seqs for r in session.replacements] == [shadowed]
        # The checkpoint sits where turn 1 was; turns 2 and 3 follow unchanged.
        assert session.nodes == [checkpoint.seq, 14, 15, 24, 25]
        assert not any(seq in session.surface for seq in shadowed)
        messages = session.derive_messages()
        assert messages[0] == checkpoint.data
        assert [m.role for m in messages] == ["user", "user", "assistant", "user", "assistant"]
        assert fold_surface(session.events) == (session.nodes, session.replacements)
        last = session.events[session.nodes[-1]]
        assert isinstance(last, AssistantMessageEvent)
        assert session.tool_pairing_balanced_after(last.seq)
        session.close()
