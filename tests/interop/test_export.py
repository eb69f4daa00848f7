"""``export_upstream``: the upstream shapes, the round trip import → export → import, and the
list of what upstream cannot express."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.events import (
    AssistantMessage,
    CompactionSummary,
    Message,
    ModelSource,
    StepStart,
    TurnStart,
    UserSource,
)
from dsh.interop import export_upstream, read_upstream
from dsh.store import MemoryStore
from dsh.store.base import SessionHeader
from dsh.surface import Session

FIXTURES = Path(__file__).parent / "fixtures"
IMPORTABLE = sorted(p.name for p in FIXTURES.glob("*.jsonl") if "surface-event" not in p.name)
HEADER = SessionHeader(type="session", version=1, id="s1", cwd="/w", created_at=7)
UPSTREAM_SURFACE_TYPES = {"user/message", "assistant/message", "tool/result"}
DSH_ONLY = {"compaction/plan", "session/settings", "request/error"}


def check_upstream_shape(data: bytes) -> list[dict]:
    """The rules of the upstream format this export promises (docs/interop.md); returns rows."""
    rows = [json.loads(line) for line in data.decode().splitlines()]
    header = rows[0]
    assert header["type"] == "session" and header["version"] == 0
    assert isinstance(header["delegationDepth"], int) and isinstance(header["createdAt"], int)
    seq = 0
    for row in rows[1:]:
        if "seq0" in row:
            assert row["seq0"] == seq and row["type"].endswith("-chunks")
            seq += len(row["data"]["dt"])
            continue
        assert row["seq"] == seq
        seq += 1
        kind = row["type"]
        assert ("surfaceOp" in row) == (kind in UPSTREAM_SURFACE_TYPES), row
        assert kind not in DSH_ONLY or row.get("ignorable") is True, row
        data = row["data"]
        if kind == "tool/result":
            assert data["message"]["role"] == "user"
        if kind in ("compaction/summary", "compaction/prune"):
            assert set(data["shadowedRange"]) == {"start", "end"}
        if kind == "compaction/summary":
            assert all(b["type"] == "text" for b in data["summary"])
            assert "kind" not in data and "passId" not in data
        if kind == "assistant/chunk":
            assert data["chunk"]["type"] in {
                "block-start",
                "text-delta",
                "reasoning-delta",
                "tool-call-delta",
                "block-end",
                "usage",
                "finish",
            }
    return rows


@pytest.mark.parametrize("name", IMPORTABLE)
def test_import_export_import_gives_equal_events(name):
    first = read_upstream((FIXTURES / name).read_bytes(), name=name)
    exported, _ = export_upstream(HEADER, first.events)
    check_upstream_shape(exported)
    again = read_upstream(exported, name="exported")
    assert again.events == first.events
    assert again.header.cwd == "/w"


@pytest.mark.parametrize(
    "name", ["02-tool-result-role.jsonl", "06-foreign-events.jsonl", "07-source-extras.jsonl"]
)
def test_export_writes_the_upstream_rows_back_where_nothing_was_lossy(name):
    original = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]
    exported, _ = export_upstream(
        HEADER, read_upstream((FIXTURES / name).read_bytes(), name=name).events
    )
    rows = check_upstream_shape(exported)
    if name.startswith("07"):  # the dropped source fields and the blocked reason stay lost
        assert rows[3]["data"]["source"] == {"kind": "agent-instructions"}
        assert rows[-1]["data"]["reason"] == {"kind": "aborted", "error": "blocked"}
        return
    assert rows[1:] == original[1:]


def test_stream_chunks_go_back_as_upstream_chunks_and_request_error_as_a_failed_finish():
    events = read_upstream((FIXTURES / "04-stream-chunks.jsonl").read_bytes(), name="f").events
    rows = check_upstream_shape(export_upstream(HEADER, events)[0])
    original = [
        json.loads(line) for line in (FIXTURES / "04-stream-chunks.jsonl").read_text().splitlines()
    ]
    assert rows[1:] == original[1:]  # chunk for chunk, the finish with its failure included


def test_runs_of_deltas_are_packed_like_upstream_stores_them():
    events = read_upstream((FIXTURES / "05-packed-rows.jsonl").read_bytes(), name="f").events
    rows = check_upstream_shape(export_upstream(HEADER, events)[0])
    packed = [r for r in rows if "seq0" in r]
    assert [(r["type"], r["seq0"]) for r in packed] == [
        ("reasoning-chunks", 3),
        ("text-chunks", 6),
        ("tool-call-chunks", 10),
    ]
    assert packed[1]["data"]["texts"] == ["Hel", "lo", " the", "re."]
    assert packed[1]["data"]["dt"] == [0, 4, 4, 1]


def test_summaries_are_blocks_with_start_end_ranges_and_the_command_id_of_their_bracket():
    events = read_upstream((FIXTURES / "03-block-summary.jsonl").read_bytes(), name="f").events
    rows = check_upstream_shape(export_upstream(HEADER, events)[0])
    summary = next(r for r in rows if r["type"] == "compaction/summary")["data"]
    assert summary["shadowedRange"] == {"start": 2, "end": 14}
    assert summary["summary"][0]["text"].startswith("## Request")
    assert summary["sourceCommandId"] == "cmd-1"
    prune = next(r for r in rows if r["type"] == "compaction/prune")["data"]
    assert prune["shadowedRange"] == {"start": 5, "end": 5}


def test_what_upstream_cannot_express_is_listed():
    store = MemoryStore()
    with Session.create(store, cwd="/w") as session:
        session.append(TurnStart(turn=1))
        session.append(StepStart(turn=1, step=1))
        session.append(
            CompactionSummary(
                compaction_id="c",
                pass_id="p",
                kind="index",
                summary="s",
                shadowed_range=(0, 1),
                shadowed_seqs=(0, 1),
                shadowed_token_count=3,
                input_range=(0, 1),
                provider="extractive",
                model="extractive",
                degraded="pointer",
            )
        )
        data, notes = export_upstream(session.header, session.events)
    assert set(notes) == {
        f"compaction/summary.{key} has no upstream field: dropped"
        for key in ("passId", "kind", "inputRange", "degraded")
    }
    assert read_upstream(data, name="e").events[2].data.kind is None  # type: ignore[union-attr]


def test_recorded_settings_go_upstream_as_ignorable_and_come_back_unchanged():
    from dsh.agent.session_settings import snapshot
    from dsh.config import Settings
    from dsh.events import SessionSettingsEvent

    with Session.create(MemoryStore(), cwd="/w") as session:
        recorded = session.append(snapshot(Settings(), "deepseek", "deepseek-chat", 4000, "/w"))
        session.append(TurnStart(turn=1))
        exported, notes = export_upstream(HEADER, session.events)
    rows = check_upstream_shape(exported)
    assert next(r for r in rows if r["type"] == "session/settings")["ignorable"] is True
    assert "session/settings has no upstream counterpart: written with ignorable: true" in notes
    again = read_upstream(exported, name="exported").events
    assert isinstance(again[0], SessionSettingsEvent) and again[0] == recorded


def test_reasoning_signatures_and_cut_off_replies_survive_export_and_import():
    """A dsh session run on Anthropic keeps its reasoning signatures (and redacted reasoning),
    a reply a provider failure cut short its error code, a reply recovered from text its text:
    exported upstream they were written, but the import dropped them (only counted in its
    report), so the imported session lost the "(the reply was cut off: …)" note and the
    signatures a thinking model must be sent back, and export never said so."""
    from dsh.events import ReasoningBlock, TextBlock
    from tests.helpers import append_chat_turn, new_session

    session = new_session(MemoryStore())
    append_chat_turn(session, "hi", "hello")
    turn = 2
    session.append(TurnStart(turn=turn))
    session.append(StepStart(turn=turn, step=1))
    session.append(
        Message(id="u9", role="user", content=(TextBlock(text="think"),), source=UserSource()),
        surface_op="append",
    )
    message = Message(
        id="a9",
        role="assistant",
        content=(
            ReasoningBlock(text="pondering", signature="sig-123"),
            ReasoningBlock(text="", redacted="opaque-bytes"),
            TextBlock(text="partial ans"),
        ),
        source=ModelSource(provider="anthropic", model="claude"),
    )
    reply = session.append(
        AssistantMessage(
            turn=turn,
            step=1,
            message=message,
            interrupted=True,
            error_code="OVERLOADED",
            recovered_from_text="partial ans",
        ),
        surface_op="append",
        source_event_seqs=[],
    )
    exported, notes = export_upstream(session.header, session.events)
    again = read_upstream(exported, name="exported")
    assert again.events[reply.seq] == reply
    assert again.events == list(session.events)
    assert not [note for note in again.notes if note.startswith("dropped field")]
    assert not notes  # nothing upstream cannot express, so nothing to warn about
