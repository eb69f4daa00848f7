"""No compaction cut parts a prompt from the notes its ``@path`` mentions attached, nor a tool
call from its result (``dsh.surface.cuts``; docs/compaction.md, "Layout").

The audit (a real model): the tail kept verbatim began with "[attached] The user attached
report.py …" while the prompt that attached it ("Second task: fix pricing.py …") and its first
note went into the checkpoint, leaving the model file dumps and no request. The property test
generates sessions of prompts with attachment notes, tool exchanges, real passes and an open
turn, and checks every cut each backend plans (the retain boundary, every stub slice, overflow
recovery's) against an oracle written here; the end-to-end test runs a pass with the
extractive summariser where such a prompt straddles the retain boundary.
"""

from __future__ import annotations

import contextlib
import itertools

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dsh.compaction import (
    BasicBackend,
    CompactionEngine,
    CompactionRefused,
    ExtractiveSummarizer,
    RecallableBackend,
)
from dsh.compaction.triggers import keep_newest_tool_exchange
from dsh.config import CompactionSettings
from dsh.events import (
    ATTACH_PLUGIN,
    AssistantMessage,
    Message,
    PluginSource,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    UserSource,
    is_checkpoint_event,
)
from dsh.store import MemoryStore
from dsh.surface import Session, retain_boundary
from tests.agent.conftest import run
from tests.helpers import (
    assistant_message,
    heuristic_price,
    new_session,
    next_turn,
    tool_call_block,
    tool_result_message,
    user_message,
)

BUDGETS = {"chunk_tokens": 400, "stub_tokens": 100, "state_max_tokens": 300}
_ids = itertools.count(1)


def _note(text: str) -> Message:
    return Message(
        id=f"attach-{next(_ids)}",
        role="user",
        content=(TextBlock(text=text),),
        source=PluginSource(plugin=ATTACH_PLUGIN),
    )


def _turn(
    session: Session,
    prompt: str,
    notes: list[str],
    exchanges: list[list[str]],
    reply: str,
    *,
    close: bool = True,
) -> int:
    """A turn as the loop logs it: the prompt and its attachment notes, then one step per
    exchange (the model's calls, each answered), then the reply; the prompt's seq."""
    turn = next_turn(session)
    session.append(TurnStart(turn=turn))
    session.append(StepStart(turn=turn, step=1))
    prompt_seq = session.append(user_message(prompt)).seq
    for text in notes:
        session.append(_note(text))
    step = 1
    for results in exchanges:
        blocks = [tool_call_block(f"call-{next(_ids)}") for _ in results]
        session.append(
            AssistantMessage(turn=turn, step=step, message=assistant_message(tool_calls=blocks))
        )
        for block, output in zip(blocks, results, strict=True):
            call = session.append(
                ToolCall(turn=turn, step=step, call_id=block.id, name=block.name, arguments="{}")
            )
            session.append(
                ToolResult(turn=turn, step=step, message=tool_result_message(block.id, output)),
                source_event_seqs=[call.seq],
            )
        session.append(StepEnd(turn=turn, step=step))
        step += 1
        session.append(StepStart(turn=turn, step=step))
    if close:
        session.append(AssistantMessage(turn=turn, step=step, message=assistant_message(reply)))
        session.append(StepEnd(turn=turn, step=step))
        session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))
    return prompt_seq


def _bad_cuts(session: Session) -> set[int]:
    """The oracle: surface positions a cut may not fall before — inside a prompt's run of
    attachment notes, or while a tool call waits for its result."""
    bad: set[int] = set()
    open_calls: set[str] = set()
    grouped = False  # the node before is a prompt or one of its notes
    for position, seq in enumerate(session.nodes):
        message = session.node_message(seq)
        attach = (
            message is not None
            and isinstance(message.source, PluginSource)
            and message.source.plugin == ATTACH_PLUGIN
        )
        if open_calls or (attach and grouped):
            bad.add(position)
        if message is not None:
            for block in message.content:
                if getattr(block, "tool_call_id", None) is not None:
                    open_calls.discard(block.tool_call_id)  # type: ignore[attr-defined]
            open_calls.update(call.id for call in message.tool_calls())
        grouped = message is not None and (attach or isinstance(message.source, UserSource))
    return bad


def _parting_cuts(session: Session) -> set[int]:
    """The oracle: surface positions of an assistant message whose nearest earlier node that
    is not an attachment note is a person's prompt — a cut before it parts request and answer."""
    parting: set[int] = set()
    last = None  # the source kind of the nearest earlier node that is no attachment note
    for position, seq in enumerate(session.nodes):
        message = session.node_message(seq)
        if message is None:
            last = None
            continue
        source = message.source
        if isinstance(source, PluginSource) and source.plugin == ATTACH_PLUGIN:
            continue
        if message.role == "assistant" and last == "prompt":
            parting.add(position)
        last = "prompt" if isinstance(source, UserSource) else message.role
    return parting


def _assert_clean(session: Session, runs: list[tuple[int, ...]]) -> None:
    bad = _bad_cuts(session)
    for seqs in runs:
        first = session.surface.position(seqs[0])
        last = session.surface.position(seqs[-1])
        assert list(session.nodes[first : last + 1]) == list(seqs), "one run of nodes"
        assert first not in bad and last + 1 not in bad, (first, last, sorted(bad))


def _assert_holds_the_tail_or_a_whole_group(session: Session, keep: int, retain: int) -> None:
    """The tail holds ``retain`` tokens (or all there is), unless the walk back to it ended
    among the notes of a prompt group larger than ``retain`` that went whole."""
    nodes = session.nodes
    if heuristic_price(session, nodes[keep:]) >= min(retain, heuristic_price(session, nodes)):
        return
    stop = max(i for i in range(len(nodes)) if heuristic_price(session, nodes[i:]) >= retain)
    start = stop
    while start > 0 and session.surface.position(nodes[start]) in _bad_cuts(session):
        start -= 1
    if start == stop < keep and stop in _parting_cuts(session):
        # the walk ended on an answer whose prompt outgrows the tail: the cut went on past the
        # answer, the whole exchange compacted (never a prompt parted from its answer)
        assert keep not in _bad_cuts(session) and keep not in _parting_cuts(session)
        return
    assert start < stop < keep, "the walk ended inside the group before the cut"
    assert heuristic_price(session, nodes[start:stop]) > retain
    assert keep not in _bad_cuts(session) and keep - 1 >= stop


TEXTS = st.integers(1, 120).map(lambda n: " ".join(f"w{n}" for _ in range(n)))
TURNS = st.lists(
    st.tuples(
        TEXTS,
        st.lists(TEXTS, max_size=3),
        st.lists(st.lists(TEXTS, min_size=1, max_size=2), max_size=2),
        TEXTS,
        st.booleans(),
    ),
    min_size=1,
    max_size=7,
)


@settings(max_examples=80, deadline=None)
@example(turns=[("w1", [], [], "w1", False)], open_turn=False, retain=1, window=4096)
@given(
    turns=TURNS,
    open_turn=st.booleans(),
    retain=st.integers(0, 1500),
    window=st.integers(4096, 20_000),
)
def test_no_planned_cut_parts_a_prompt_from_its_attachments_or_a_call_from_its_result(
    turns, open_turn, retain, window
):
    session = new_session(MemoryStore())
    config = CompactionSettings(backend="recallable", retain_tokens=300, **BUDGETS)
    passes = CompactionEngine(session, RecallableBackend(ExtractiveSummarizer(), config), config)
    for number, (prompt, notes, exchanges, reply, compact_after) in enumerate(turns):
        _turn(session, f"task {number}: {prompt}", notes, exchanges, reply)
        if compact_after:  # real passes: their cuts and chunks are checked on the surface
            with contextlib.suppress(CompactionRefused):  # a pass too small to shrink
                run(passes.compact_now(window=window))
            checkpoints = [s for s in session.nodes if is_checkpoint_event(session.events[s])]
            _assert_clean(session, [(seq,) for seq in checkpoints])
    if open_turn:
        _turn(session, "now: fix it", ["[attached] a.py"], [["ok"]], "", close=False)
    keep = retain_boundary(session, retain)
    assert keep not in _bad_cuts(session)
    _assert_holds_the_tail_or_a_whole_group(session, keep, retain)
    overflow_retain = keep_newest_tool_exchange(session, 10**9)
    for backend in (
        RecallableBackend(ExtractiveSummarizer(), config),
        BasicBackend(ExtractiveSummarizer(), config),
    ):
        for reason, tokens in (
            ("pressure", retain),
            ("manual", retain),
            ("overflow", overflow_retain),
        ):
            plan = backend.plan(
                session, retain_tokens=tokens, focus=None, reason=reason, window=window
            )
            if plan is not None:
                _assert_clean(session, [r.shadowed_seqs for r in plan.regions])


def _straddling_session(pricing_lines: int = 60) -> tuple[Session, int, list[int]]:
    """History, then a closed turn whose prompt attached two files, then a short turn; the
    prompt's seq and its notes' seqs."""
    session = new_session(MemoryStore())
    for i in range(6):
        _turn(
            session,
            f"task {i}: read src/mod_{i}.py",
            [],
            [[f"line {i} of mod_{i}\n" * 40]],
            f"mod_{i} sets port = {8000 + i}",
        )
    prompt = _turn(
        session,
        "Second task: fix pricing.py so the discount applies once, then check report.py",
        [
            "[attached] The user attached pricing.py (as read_file shows it):\n"
            + "".join(f"{n}: price_{n} = {n * 3}\n" for n in range(pricing_lines)),
            "[attached] The user attached report.py (as read_file shows it):\n"
            + "".join(f"{n}: total_{n} = price_{n} * qty\n" for n in range(60)),
        ],
        [],
        "Fixed: the discount is applied once in apply_discount().",
    )
    _turn(session, "thanks", [], [], "You're welcome.")
    notes = [prompt + 1, prompt + 2]
    return session, prompt, notes


@pytest.mark.parametrize("backend", ["recallable", "basic"])
def test_a_pass_whose_retain_boundary_falls_among_a_prompts_attachments_keeps_them_with_it(
    backend: str,
):
    session, prompt, notes = _straddling_session()
    result = _pass_ending_on(session, notes[1], backend)
    assert result is not None and result.checkpoints
    nodes = session.nodes
    tail = [seq for seq in nodes if not is_checkpoint_event(session.events[seq])]
    assert tail[:3] == [prompt, *notes], "the tail starts with the prompt and both its notes"
    messages = [m.text() for m in session.derive_messages()]
    asked = next(n for n, text in enumerate(messages) if text.startswith("Second task"))
    assert messages[asked + 1].startswith("[attached] The user attached pricing.py")
    assert messages[asked + 2].startswith("[attached] The user attached report.py")
    shadowed = {s for ref in result.checkpoints for s in ref.shadowed_seqs}
    assert not shadowed & {prompt, *notes}


@pytest.mark.parametrize("backend", ["recallable", "basic"])
def test_a_prompt_group_larger_than_the_retained_tail_is_compacted_whole(backend: str):
    """The walk ends on report.py's note, but the prompt and pricing.py's note before it are
    larger than the retained tail itself: the whole group goes into the compacted history
    (the tail would more than double), the request with both files, none left orphaned — and
    with the answer to it, so the tail does not open on an answer whose request was compacted
    (a state covering the request alone listed it as a next step)."""
    session, prompt, notes = _straddling_session(pricing_lines=400)
    result = _pass_ending_on(session, notes[1], backend)
    shadowed = {s for ref in result.checkpoints for s in ref.shadowed_seqs}
    assert {prompt, *notes, notes[1] + 1} <= shadowed
    tail = [seq for seq in session.nodes if not is_checkpoint_event(session.events[seq])]
    assert session.events[tail[0]].data.text() == "thanks"
    texts = "\n".join(session.events[ref.checkpoint_seq].data.text() for ref in result.checkpoints)
    assert "Second task: fix pricing.py" in texts


def _pass_ending_on(session: Session, seq: int, backend: str) -> object:
    """A manual pass of ``backend`` whose walk back to the retained tail ends on node ``seq``
    (the extractive summariser); its result."""
    position = session.surface.position(seq)
    retain = heuristic_price(session, session.nodes[position:])
    config = CompactionSettings(backend=backend, retain_tokens=retain, **BUDGETS)  # type: ignore[arg-type]
    kind = RecallableBackend if backend == "recallable" else BasicBackend
    engine = CompactionEngine(session, kind(ExtractiveSummarizer(), config), config)
    result = run(engine.compact_now(window=100_000))
    assert result is not None and result.checkpoints
    return result
