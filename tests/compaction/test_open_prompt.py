"""The prompt an open turn answers is never compacted (docs/compaction.md, "The prompt a turn
answers"): not by overflow recovery, not by a pressure pass, in either backend. The real loop
runs with the keyless scripted provider; the history before the prompt and the turn's own
exchanges after it are compacted around it."""

from __future__ import annotations

import itertools

import pytest

from dsh.agent import Agent
from dsh.agent.hooks import compaction_hooks
from dsh.compaction import (
    BasicBackend,
    CompactionEngine,
    ExtractiveSummarizer,
    RecallableBackend,
)
from dsh.config import CompactionSettings
from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    RequestErrorEvent,
    StepStart,
    StepStartEvent,
    ToolResultEvent,
    TurnStart,
    TurnStartEvent,
    UserMessageEvent,
    UserSource,
    is_append_surface_event,
    is_checkpoint_event,
)
from dsh.surface import Session
from tests.agent.conftest import Harness, run
from tests.helpers import append_chat_turn, user_message

OVERFLOW = {"error": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "prompt is too long"}}
BACKENDS = ["recallable", "basic"]
PROMPT = (
    "please review this log:\n"
    + "".join(f"line {n}: héllo wörld, value_{n} = {n * 7}\n" for n in range(120))
    + "END-OF-PROMPT-7731"
)


def _engine(harness: Harness, backend: str, **budgets: object) -> CompactionEngine:
    settings = CompactionSettings(
        backend=backend,  # type: ignore[arg-type]
        **{
            "retain_tokens": 300,
            "chunk_tokens": 400,
            "stub_tokens": 100,
            "state_max_tokens": 300,
            **budgets,
        },  # type: ignore[arg-type]
    )
    kind = RecallableBackend if backend == "recallable" else BasicBackend
    ids = itertools.count(1)
    return CompactionEngine(
        harness.session,
        kind(ExtractiveSummarizer(), settings),
        settings,
        new_id=lambda: f"p{next(ids)}",
    )


def _wired(agent: Agent, engine: CompactionEngine) -> Agent:
    pre_step, overflow = compaction_hooks(engine)
    agent.pre_step_hooks.append(pre_step)
    agent.overflow_handler = overflow
    return agent


def _calls_so_far(session: Session) -> int:
    return sum(isinstance(e, AssistantMessageEvent | RequestErrorEvent) for e in session.events)


def _prompt_of(session: Session, turn: int) -> int:
    """The seq of the person's prompt of ``turn``."""
    start = next(e.seq for e in session.of_type(TurnStartEvent) if e.data.turn == turn)
    return next(
        e.seq
        for e in session.of_type(UserMessageEvent)
        if e.seq > start and isinstance(e.data.source, UserSource)
    )


def _shadowed(session: Session) -> set[int]:
    return {seq for s in session.of_type(CompactionSummaryEvent) for seq in s.data.shadowed_seqs}


def _kept_verbatim(session: Session, seq: int) -> bool:
    return seq in session.surface and is_append_surface_event(session.events[seq])


def _history(session: Session, turns: int = 6) -> None:
    for i in range(turns):
        append_chat_turn(
            session, f"question {i}: what does module_{i} do? " + "detail " * 60, f"answer {i}"
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_overflow_after_a_long_prompt_compacts_the_history_not_the_prompt(
    harness: Harness, backend: str
):
    """The audit's case: the server refuses the request that carries a long prompt; recovery
    used to compact everything with no tool call to keep, the prompt included, and the turn
    answered a summary of its first line. Now the history goes, the prompt stays, and the
    retried request carries it whole."""
    _history(harness.session)
    engine = _engine(harness, backend)
    script = [{"text": "(earlier)"}] * _calls_so_far(harness.session)
    agent = _wired(harness.agent([*script, OVERFLOW, {"text": "ANSWERED"}]), engine)
    result = run(agent.run_turn(PROMPT))
    assert (result.reason, result.text) == ("completed", "ANSWERED")
    session = harness.session
    prompt = _prompt_of(session, 7)
    assert _kept_verbatim(session, prompt) and prompt not in _shadowed(session)
    assert _prompt_of(session, 1) in _shadowed(session)  # the history was compacted
    retried = harness.provider.requests[-1]
    assert [m.text() for m in retried.messages if m.text() == PROMPT] == [PROMPT]


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_overflow_of_the_prompt_alone_changes_nothing_and_ends_the_turn(
    harness: Harness, backend: str
):
    """Nothing before the prompt, nothing after it: there is nothing to compact, so the turn
    ends as the server's error instead of answering a summary of the prompt."""
    engine = _engine(harness, backend)
    agent = _wired(harness.agent([OVERFLOW, {"text": "answered a summary"}]), engine)
    result = run(agent.run_turn(PROMPT))
    assert result.reason == "error" and "CONTEXT_WINDOW_EXCEEDED" in (result.error or "")
    session = harness.session
    assert _kept_verbatim(session, _prompt_of(session, 1))
    assert not session.of_type(CompactionSummaryEvent)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_overflow_deep_in_a_turn_compacts_around_its_prompt(harness: Harness, backend: str):
    """The turn's earlier exchanges are compacted after the prompt, the history before it; the
    newest tool exchange and the prompt stay verbatim (recallable: the state follows the
    prompt; basic: one summary on each side of it)."""
    _history(harness.session)
    for n in range(4):
        (harness.workspace / f"part{n}.log").write_text(f"part {n} line\n" * 80)
    reads = [
        {"toolCalls": [{"name": "read_file", "arguments": {"path": f"part{n}.log"}}]}
        for n in range(4)
    ]
    script = [{"text": "(earlier)"}] * _calls_so_far(harness.session)
    engine = _engine(harness, backend)
    agent = _wired(harness.agent([*script, *reads, OVERFLOW, {"text": "DONE"}]), engine)
    result = run(agent.run_turn("read the four parts and compare them"))
    assert (result.reason, result.text) == ("completed", "DONE")
    session = harness.session
    prompt = _prompt_of(session, 7)
    assert _kept_verbatim(session, prompt) and prompt not in _shadowed(session)
    results = [e.seq for e in session.of_type(ToolResultEvent) if e.data.turn == 7]
    assert results[0] in _shadowed(session)  # the turn's first exchange was compacted
    assert _kept_verbatim(session, results[-1])  # the newest one kept
    after = session.nodes[session.nodes.index(prompt) + 1]
    assert is_checkpoint_event(session.events[after])  # what the turn did so far, summarised
    before = session.nodes[session.nodes.index(prompt) - 1]
    assert is_checkpoint_event(session.events[before])  # and the history before it


@pytest.mark.parametrize("backend", BACKENDS)
def test_pressure_passes_in_a_long_turn_keep_its_prompt_until_the_turn_ends(
    harness: Harness, backend: str
):
    """A turn of many tool steps crosses the threshold several times; every pass compacts the
    turn's own exchanges after its prompt. Once the turn is over the prompt is history like
    any other message, and a later pass may compact it."""
    for n in range(16):
        (harness.workspace / f"f{n}.txt").write_text(f"file {n} row\n" * 150)
    reads = [
        {"toolCalls": [{"name": "read_file", "arguments": {"path": f"f{n}.txt"}}]}
        for n in range(16)
    ]
    engine = _engine(harness, backend, retain_tokens=None, chunk_tokens=None)
    agent = _wired(harness.agent([*reads, {"text": "ALL READ"}], context_window=6000), engine)
    result = run(agent.run_turn("read the sixteen files one by one"))
    assert (result.reason, result.text) == ("completed", "ALL READ")
    session = harness.session
    prompt = _prompt_of(session, 1)
    landed = [e for e in session.of_type(CompactionEndEvent) if e.data.error is None]
    assert len({e.data.pass_id for e in landed}) >= 2  # it compacted more than once in the turn
    assert _kept_verbatim(session, prompt) and prompt not in _shadowed(session)
    first_result = next(e.seq for e in session.of_type(ToolResultEvent))
    assert first_result in _shadowed(session)
    run(engine.compact_now(window=6000))  # the turn has ended: its prompt may go now
    assert prompt in _shadowed(session)


def test_a_pressure_check_counts_the_prompt_about_to_be_logged(harness: Harness):
    """Before a turn's first step its prompt is not logged yet; the check counts it, so a
    history that the prompt pushes over the threshold is compacted before the request that
    would carry both, not after the server refused it."""
    _history(harness.session, 30)
    engine = _engine(harness, "recallable")
    prompt = "x" * 6000  # about 1,500 tokens
    before = engine.next_request_tokens()
    window = int((before + 700) / 0.8) + 1  # the threshold: 700 tokens above the history
    script = [{"text": "(earlier)"}] * _calls_so_far(harness.session)
    agent = _wired(harness.agent([*script, {"text": "ok"}], context_window=window), engine)
    run(agent.run_turn(prompt))
    session = harness.session
    start = session.of_type(TurnStartEvent)[-1].seq
    first_step = next(e.seq for e in session.of_type(StepStartEvent) if e.seq > start)
    passes = [e.seq for e in session.of_type(CompactionStartEvent) if e.seq > start]
    assert passes and passes[0] < first_step


def test_a_pass_that_lands_above_the_threshold_says_what_holds_it_once(harness: Harness):
    """A prompt that takes most of the threshold (it is never compacted) leaves a pass above
    it: said once per crossing, with what the request is made of, and the loop goes on."""
    _history(harness.session, 30)
    session = harness.session
    session.append(TurnStart(turn=31))
    session.append(StepStart(turn=31, step=1))
    session.append(user_message("y" * 12_000))  # about 3,000 tokens, open turn 31's prompt
    engine = _engine(harness, "recallable")
    window = 4096
    assert run(engine.compact_if_needed("pressure", turn=31, window=window)) is not None
    (said,) = engine.warnings
    assert said.startswith("context is still ~") and "after compaction, above the threshold" in said
    assert "of 3,276 (0.8 of the 4,096-token window)" in said
    for part in ("the system prompt and tools take", "checkpoints", "the messages kept verbatim"):
        assert part in said
    session.append(user_message("z" * 2000))
    run(engine.compact_if_needed("pressure", turn=31, window=window))
    assert len(engine.warnings) == 1  # the same crossing: not again


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_prompt_as_long_as_the_retained_tail_makes_the_turn_before_it_stale(
    harness: Harness, backend: str
):
    """The audit's two ~2k-token prompts in a 4,096-token window: the tail kept verbatim held
    the first prompt (whole messages, at least ``retain_tokens``), so nothing was stale and
    the second request went out at ~5.3k tokens. The prompt about to be logged is the newest of
    the tail: it counts against ``retain_tokens``, and the turn before it can be compacted."""
    session = harness.session
    append_chat_turn(session, "first: " + "word " * 1600, "answer one")
    engine = _engine(harness, backend, retain_tokens=1500)
    incoming = 2000  # the next prompt, about to be logged
    result = run(engine.compact_if_needed("pressure", turn=2, window=4096, incoming=incoming))
    assert result is not None
    assert _prompt_of(session, 1) in _shadowed(session)
    assert engine.next_request_tokens() + incoming < 4096


def test_a_request_over_the_window_that_nothing_can_shrink_is_said_once(harness: Harness):
    """An open turn's prompt alone over the window (it is never compacted, and nothing else
    is there): no pass can run, and the engine says so instead of sending it silently."""
    session = harness.session
    session.append(TurnStart(turn=1))
    session.append(StepStart(turn=1, step=1))
    session.append(user_message("y" * 20_000))  # about 5,000 tokens
    engine = _engine(harness, "recallable")
    assert run(engine.compact_if_needed("pressure", turn=1, window=4096)) is None
    (said,) = engine.warnings
    assert said.startswith("context is ~")
    assert "tokens and nothing can be compacted yet, above the threshold of 3,276" in said
    run(engine.compact_if_needed("pressure", turn=1, window=4096))
    assert len(engine.warnings) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_overflow_keeps_the_files_the_prompt_attached_with_it(harness: Harness, backend: str):
    """The audit: `review @big.txt` overflowed, recovery kept the prompt but shadowed its
    attachment note, and the model answered without the file it was asked about. The notes a
    prompt's ``@path`` mentions attach are kept with it, verbatim."""
    (harness.workspace / "big.txt").write_text(
        "".join(f"row {n}: value_{n} = {n * 3}\n" for n in range(200)) + "FILE-END-5521\n"
    )
    _history(harness.session)
    engine = _engine(harness, backend)
    script = [{"text": "(earlier)"}] * _calls_so_far(harness.session)
    agent = _wired(
        harness.agent([*script, OVERFLOW, {"text": "ANSWERED"}], attach_mentions=True), engine
    )
    result = run(agent.run_turn("review @big.txt please"))
    assert (result.reason, result.text) == ("completed", "ANSWERED")
    session = harness.session
    start = session.of_type(TurnStartEvent)[-1].seq
    notes = [
        e.seq
        for e in session.of_type(UserMessageEvent)
        if e.seq > start and e.data.id.startswith("attach-")
    ]
    assert notes, "the mention attached the file"
    assert all(_kept_verbatim(session, seq) for seq in notes)
    assert _prompt_of(session, 1) in _shadowed(session)  # the history was compacted
    retried = harness.provider.requests[-1]
    assert "FILE-END-5521" in "".join(m.text() for m in retried.messages)
