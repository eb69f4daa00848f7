"""A compaction pass that did not finish shows in the transcript as one dim note, with its
reason: an automatic pass whose summariser failed (its ``compaction/end`` error), and a pass a
dead process left open, closed with a reason when the session is next opened for writing
(``dsh.store.pass_repair``). A manual pass is said by its ``/compact``'s answer instead, once.
Neither changes what the model sees."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

import pytest

from dsh.compaction import BasicBackend, CompactionEngine
from dsh.compaction.commands import run_compact_command
from dsh.compaction.summarizer import SummaryOutput, SummaryTask
from dsh.config import CompactionSettings
from dsh.errors import ProviderError
from dsh.events import (
    CompactionEnd,
    CompactionEndEvent,
    CompactionStart,
    CompactionStartEvent,
    Event,
    TurnStart,
)
from dsh.store import JsonlStore, MemoryStore
from dsh.surface import Session, fold_surface
from dsh.transcript import NoteItem, project, render_human_transcript, render_markdown
from tests.helpers import append_chat_turn
from tests.killed_pass import killed_pass_session

WORDS = "words " * 60
SETTINGS = CompactionSettings(backend="basic", retain_tokens=200)
FAILED = (
    "Compaction pass did not finish: summary failed: server_error: the server said no: "
    "\\x1b[31mbusy"
)
"""The note of the pass below: ``error_line``'s one line, the escape shown, not sent."""
KILLED = "Compaction pass did not finish: the process ended during the pass"


class Refuses:
    """A summariser whose call fails, with a provider's text (two lines, an escape)."""

    name = model = "refuses"

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        raise ProviderError("server_error", "the server said no:\n\x1b[31mbusy")


def chatted() -> Session:
    session = Session.create(MemoryStore(), cwd="/w")
    for i in range(8):
        append_chat_turn(session, f"question {i} {WORDS}", f"answer {i} {WORDS}")
    return session


def notes(events: list[Event]) -> list[str]:
    items, _ = project(events)
    return [item.text for item in items if isinstance(item, NoteItem)]


def test_an_automatic_pass_that_failed_shows_one_note_with_its_reason_in_every_text():
    session = chatted()
    before = list(session.derive_messages())
    session.append(TurnStart(turn=9))
    engine = CompactionEngine(session, BasicBackend(Refuses(), SETTINGS), SETTINGS)
    assert asyncio.run(engine.compact_if_needed("pressure", turn=9, window=1_000)) is None
    events = list(session.events)
    assert [type(e) for e in events[-2:]] == [CompactionStartEvent, CompactionEndEvent]
    assert notes(events) == [FAILED]
    items, _ = project(events)
    assert items[-1] == NoteItem(events[-1].seq, FAILED)  # where the pass ended
    assert render_human_transcript(events).endswith(f"\n\n({FAILED})")
    assert f"*{FAILED}*" in render_markdown(session.header, events)
    assert session.derive_messages() == before  # the model sees what it saw


def test_a_failed_slash_compact_is_said_once_by_its_answer_an_automatic_pass_by_its_note():
    session = chatted()
    engine = CompactionEngine(session, BasicBackend(Refuses(), SETTINGS), SETTINGS)
    ok, text = asyncio.run(run_compact_command(engine, window=100_000))
    assert not ok and text.startswith("Compaction failed: summary failed: ")
    session.append(TurnStart(turn=9))
    asyncio.run(engine.compact_if_needed("pressure", turn=9, window=1_000))
    assert notes(list(session.events)) == [text, FAILED]


def test_a_pass_is_noted_once_whatever_its_failed_ends_and_a_pass_that_ended_well_not_at_all():
    def start(cid: str, pass_id: str) -> CompactionStartEvent:
        return CompactionStartEvent(
            seq=0, time=0, data=CompactionStart(compaction_id=cid, pass_id=pass_id, turn=4)
        )

    def end(cid: str, pass_id: str, error: str | None) -> CompactionEndEvent:
        return CompactionEndEvent(
            seq=0,
            time=0,
            data=CompactionEnd(compaction_id=cid, pass_id=pass_id, turn=4, error=error),
        )

    # a resumed plan abandoned: one failed end per open bracket of its pass
    log: list[Event] = [
        start("a-2", "a"),
        start("a-3", "a"),
        end("a-2", "a", "plan abandoned on resume: region 2 is no longer one run"),
        end("a-3", "a", "plan abandoned on resume: region 2 is no longer one run"),
        start("b-1", "b"),
        end("b-1", "b", None),
    ]
    log = [type(e)(seq=seq, time=0, data=e.data) for seq, e in enumerate(log)]
    assert notes(log) == [
        "Compaction pass did not finish: plan abandoned on resume: region 2 is no longer one run"
    ]


@pytest.mark.parametrize("how", ["turn", "compact"])
def test_a_pass_a_dead_process_left_open_shows_once_the_session_is_opened_for_writing(
    tmp_path: Path, how: Literal["turn", "compact"]
):
    session_id = killed_pass_session(tmp_path / "home", tmp_path, how)
    store = JsonlStore(tmp_path / "home")
    with store.open(session_id) as log:  # read-only: nothing written, nothing to show yet
        killed = list(log.events)
    assert isinstance(killed[-1], CompactionStartEvent)
    assert KILLED not in "".join(notes(killed))
    with store.open(session_id, writable=True) as log:
        repaired = list(log.events)
    shown = notes(repaired)
    assert shown.count(KILLED) == 1  # the turn's pass by its note, /compact's by its answer
    if how == "turn":
        assert shown[-2:] == [KILLED, "Turn interrupted: dsh stopped before it ended."]
    assert f"({KILLED})" in render_human_transcript(repaired)
    # what the model is sent is what it was before the pass began: the same nodes, no replace
    assert fold_surface(repaired) == fold_surface(killed)
    assert fold_surface(repaired)[1] == []
