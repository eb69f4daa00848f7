"""Forking a session (``dsh.agent.fork``): the copy's log is the parent's prefix, byte for byte,
with the fork in its header and its own writes after a ``session/end-seed``; a checkpoint in the
copied part is recalled in the fork as in the parent; a fork before turn N leaves that turn out
and hands back its prompt; the parent is never written; a turn no prompt started is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.agent.fork import FORK_MARK, fork_session, turn_prompts
from dsh.errors import UsageError
from dsh.events import (
    CompactionSummaryEvent,
    SessionEndSeedEvent,
    SessionTitleEvent,
    ToolResultEvent,
    encode_event,
)
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.agent.conftest import run
from tests.compaction.test_recall_end_to_end import FACT, PROMPTS, drive
from tests.helpers import fixed_clock

ANSWERS = [{"text": f"ok {i} " + "words " * 80} for i in range(len(PROMPTS))]


def compacted_session(tmp_path: Path) -> tuple[JsonlStore, str]:
    store = JsonlStore(tmp_path / "home")
    entries = list(ANSWERS)
    with Session(store.create(cwd=str(tmp_path)), clock=fixed_clock) as session:
        _, _, agent = drive(ScriptedProvider(entries), tmp_path, session=session)
        for prompt in PROMPTS:
            run(agent.run_turn(prompt))
        assert session.of_type(CompactionSummaryEvent), "the small window must have compacted"
        return store, session.id


def test_a_fork_copies_the_log_and_recalls_what_its_checkpoints_stand_for(tmp_path: Path):
    store, parent_id = compacted_session(tmp_path)
    parent_bytes = (tmp_path / "home" / "sessions" / parent_id / "session.jsonl").read_bytes()
    made = fork_session(store, parent_id)
    assert made.before is None and made.parent == parent_id
    with Session.open(store, parent_id) as parent:
        parent_events = list(parent.events)
    with Session.open(store, made.session_id, writable=True) as fork:
        fork.clock = fixed_clock
        assert fork.header.parent_session == parent_id
        assert fork.header.seed_length == len(parent_events) == made.copied
        copied = fork.events[: made.copied]
        assert [encode_event(e) for e in copied] == [encode_event(e) for e in parent_events]
        assert isinstance(fork.events[made.copied], SessionEndSeedEvent)
        titles = fork.of_type(SessionTitleEvent)
        assert titles[-1].data.title.endswith(FORK_MARK)

        search = {"name": "history_search", "arguments": {"query": "ZEBRA-7731"}}
        # the scripted model answers call N of the log with entry N: the parent's came first
        script = [*ANSWERS, {"toolCalls": [search]}, {"text": f"The {FACT}."}]
        _, _, agent = drive(ScriptedProvider(script), tmp_path, session=fork)
        result = run(agent.run_turn("what was the deploy id?"))
        assert result.text == f"The {FACT}."
        found = fork.of_type(ToolResultEvent)[-1].data.message.content[0].content[0].text
        assert "ZEBRA-7731" in found
    after = (tmp_path / "home" / "sessions" / parent_id / "session.jsonl").read_bytes()
    assert after == parent_bytes  # the parent was only read


def test_a_fork_before_a_turn_leaves_it_out_and_hands_back_its_prompt(tmp_path: Path):
    store, parent_id = compacted_session(tmp_path)
    with Session.open(store, parent_id) as parent:
        turns = turn_prompts(parent.events)
    assert [t.prompt for t in turns] == PROMPTS
    last = turns[-1]
    made = fork_session(store, parent_id, before_turn=last.turn)
    assert made.before == last and made.copied == last.seq
    with Session.open(store, made.session_id) as fork:
        assert [t.prompt for t in turn_prompts(fork.events)] == PROMPTS[:-1]
    with pytest.raises(UsageError, match=r"no turn 99 started by a prompt \(its turns with one"):
        fork_session(store, parent_id, before_turn=99)
