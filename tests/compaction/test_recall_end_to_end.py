"""Keyless end to end: compact, then the model recalls a fact with history_search and
history_read and answers with it; a replay of the recording gives identical bytes, and every
request of the session is rebuilt byte-equal from the log."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from dsh.agent import Agent, AgentConfig, rebuild_requests, system_prompt
from dsh.agent.hooks import compaction_hooks
from dsh.agent.recall_offer import recall_offer
from dsh.bench.runner import BENCH_ENVIRONMENT
from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.config import CompactionSettings, RecallSettings
from dsh.events import CompactionSummaryEvent, ToolResultEvent, encode_event, encode_json
from dsh.llm.replay import ReplayProvider
from dsh.llm.scripted import ScriptedProvider
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools
from tests.agent.conftest import run
from tests.helpers import fixed_clock

SETTINGS = CompactionSettings(
    backend="recallable",
    retain_tokens=200,
    chunk_tokens=400,
    stub_tokens=100,
    state_max_tokens=300,
)
FACT = "deploy id is ZEBRA-7731"
PROMPTS = [
    f"note {i}: " + ("the deploy id is ZEBRA-7731. " if i == 1 else "") + "filler " * 150
    for i in range(6)
]


def drive(
    provider, workspace: Path, *, window: int = 3000, session: Session | None = None
) -> tuple[Session, CompactionEngine, Agent]:
    """An agent wired as ``build_parts`` wires one: the recall tools in the registry, their
    offer in the config, what the offer adds counted by the engine and the backend (on
    ``session``, else a new one in memory)."""
    if session is None:
        session = Session(MemoryStore().create(cwd=str(workspace)), clock=fixed_clock)
    recalled, offer = recall_offer(RecallSettings())
    ids = itertools.count(1)
    to_come = offer.tokens_to_come
    engine = CompactionEngine(
        session,
        RecallableBackend(ExtractiveSummarizer(), SETTINGS, standing_after_pass=to_come),
        SETTINGS,
        new_id=lambda: f"p{next(ids)}",
        standing_after_pass=to_come,
    )
    pre_step, overflow = compaction_hooks(engine)
    agent = Agent(
        session,
        provider,
        ToolRegistry([*default_tools(), *recalled]),
        ApprovalPolicy("auto"),
        config=AgentConfig(
            provider="scripted",
            model="m",
            context_window=window,
            system=system_prompt(workspace, BENCH_ENVIRONMENT),
            recall=offer,
        ),
        workspace=workspace,
        pre_step_hooks=[pre_step],
        overflow_handler=overflow,
    )
    return session, engine, agent


def test_the_model_recalls_a_compacted_fact_and_replay_is_byte_identical(tmp_path: Path):
    entries = [{"text": f"ok {i} " + "words " * 80} for i in range(len(PROMPTS))]
    provider = ScriptedProvider(entries)
    session, _, agent = drive(provider, tmp_path)
    for prompt in PROMPTS:
        run(agent.run_turn(prompt))
    summaries = [e for e in session.events if isinstance(e, CompactionSummaryEvent)]
    assert summaries, "the small window must have compacted"
    assert not any("ZEBRA-7731" in m.text() for m in session.derive_messages()[-4:])

    # The next turn: the model searches, reads the checkpoint it found, and answers.
    checkpoint = next(f"c{s.seq}" for s in summaries if "ZEBRA-7731" in _span_text(session, s))
    search = {"name": "history_search", "arguments": {"query": "ZEBRA-7731"}}
    read = {"name": "history_read", "arguments": {"checkpoint": checkpoint}}
    script = [{"toolCalls": [search]}, {"toolCalls": [read]}, {"text": f"The {FACT}."}]
    provider.entries.extend(ScriptedProvider(script).entries)
    result = run(agent.run_turn("what was the deploy id?"))
    assert result.text == f"The {FACT}."
    recalls = [e for e in session.events if isinstance(e, ToolResultEvent)][-2:]
    found, shown = (r.data.message.content[0].content[0].text for r in recalls)
    assert checkpoint in found and "ZEBRA-7731" in shown

    # every request, across passes and recall calls, is what the log says it was
    rebuilt = [request for _, request in rebuild_requests(session.events)]
    assert len(rebuilt) == len(provider.requests)
    for sent, again in zip(provider.requests, rebuilt, strict=True):
        assert encode_json(sent.messages) == encode_json(again.messages)

    # keyless replay of the recording reproduces the log byte for byte
    replay = ReplayProvider(list(session.events), name="scripted", model="m")
    replayed, _, replay_agent = drive(replay, tmp_path)
    for prompt in [*PROMPTS, "what was the deploy id?"]:
        run(replay_agent.run_turn(prompt))
    assert [encode_event(e) for e in replayed.events] == [encode_event(e) for e in session.events]


def _span_text(session: Session, summary: CompactionSummaryEvent) -> str:
    return json.dumps(
        [encode_event(session.events[s]).decode() for s in summary.data.shadowed_seqs]
    )


def test_stability_check_refuses_a_pass_when_the_surface_moved_under_it():
    from dsh.compaction import CompactionRefused
    from tests.compaction.test_recallable import long_session

    session = long_session()

    class Mover:
        name = model = "mover"

        async def summarize(self, task):
            from tests.helpers import append_chat_turn

            if task.kind in ("state", "pass"):
                append_chat_turn(session, "meanwhile", "moved")
            return await ExtractiveSummarizer().summarize(task)

    engine = CompactionEngine(session, RecallableBackend(Mover(), SETTINGS), SETTINGS)
    before = len(session.nodes)
    try:
        run(engine.compact_now(window=100_000))
    except CompactionRefused as exc:
        assert "changed while summarising" in str(exc)
    else:
        raise AssertionError("the pass must be refused")
    assert len(session.nodes) == before + 2  # only the concurrent turn landed
