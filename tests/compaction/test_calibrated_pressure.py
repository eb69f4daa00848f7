"""The pressure check counts as the server counts (docs/compaction.md, "Triggers"; the audit with
Qwen2.5-Coder on llama.cpp: its tokenizer counted a prompt carrying a Python file about 30%
above dsh's heuristic, and a request went out at 88% of the window while dsh believed it far
lower). The real loop runs with the keyless scripted provider behind a tokenizer that counts
1.3 times the heuristic; the second turn attaches a Python file. Without the calibration, the
check before that turn's first step saw the request below the threshold and sent it; with it,
the history is compacted first and the request that goes out is below the threshold as the
server counts it."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from fractions import Fraction
from pathlib import Path

from dsh.agent import Agent
from dsh.agent.hooks import compaction_hooks
from dsh.agent.mentions import attachment_notes
from dsh.agent.room import fixed_tokens
from dsh.compaction import BasicBackend, CompactionEngine, ExtractiveSummarizer
from dsh.config import CompactionSettings
from dsh.events import (
    AssistantMessageEvent,
    CompactionSummaryEvent,
    Event,
    Message,
    TextBlock,
    TurnStartEvent,
    Usage,
    UserSource,
)
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent, UsageReport
from dsh.surface import message_tokens, system_tokens, tools_tokens
from tests.agent.conftest import Harness, run
from tests.helpers import assistant_message

WINDOW = 8_192
COUNTS_MORE = Fraction(13, 10)
CODE = "".join(
    f"def handler_{n}(request, *, limit={n}):\n"
    f"    return {{'id': {n}, 'items': request.items[:limit], 'ok': True}}\n\n"
    for n in range(80)
)


class CountsMore:
    """The scripted provider's replies, their usage as a tokenizer that counts ``factor`` times
    dsh's heuristic reports it (the scripted provider reports the heuristic itself)."""

    def __init__(self, inner: ScriptedProvider, factor: Fraction) -> None:
        self.inner = inner
        self.name = inner.name
        self.factor = factor

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        return self._counted(self.inner.stream(request, history=history))

    async def _counted(self, events: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
        async for event in events:
            if isinstance(event, UsageReport):
                usage = event.usage
                counted = int(usage.request_tokens() * self.factor)
                event = UsageReport(Usage(input_tokens=counted, output_tokens=usage.output_tokens))
            yield event


def _engine(harness: Harness) -> CompactionEngine:
    settings = CompactionSettings(
        backend="basic", retain_tokens=300, chunk_tokens=400, state_max_tokens=300
    )
    ids = itertools.count(1)
    return CompactionEngine(
        harness.session,
        BasicBackend(ExtractiveSummarizer(), settings),
        settings,
        new_id=lambda: f"p{next(ids)}",
    )


def _agent(harness: Harness, engine: CompactionEngine) -> Agent:
    agent = harness.agent(
        [{"text": "ok"}, {"text": "explained"}], context_window=WINDOW, attach_mentions=True
    )
    agent.provider = CountsMore(harness.provider, COUNTS_MORE)
    pre_step, overflow = compaction_hooks(engine)
    agent.pre_step_hooks.append(pre_step)
    agent.overflow_handler = overflow
    return agent


def _incoming(agent: Agent, prompt: str, turn: int) -> int:
    """What the loop counts a turn's first step is about to log: the prompt and its notes."""
    typed = Message(id="u", role="user", content=(TextBlock(text=prompt),), source=UserSource())
    notes = attachment_notes(agent.attachments(prompt), turn=turn)
    return sum(message_tokens(m) for m in [typed, *notes])


def test_a_request_the_heuristic_lets_through_is_compacted_first_when_the_server_counts_more(
    tmp_path: Path,
):
    harness = Harness(tmp_path)
    (harness.workspace / "handlers.py").write_text(CODE)
    engine = _engine(harness)
    agent = _agent(harness, engine)
    threshold = engine.threshold(WINDOW)
    second = "explain @handlers.py"
    incoming = _incoming(agent, second, turn=2)
    reply = message_tokens(assistant_message("ok"))
    # The first prompt is sized so that the first request, as the server counts it, plus what
    # the second turn adds by the heuristic stays 15% of that addition below the threshold.
    first_request = (threshold - (incoming + reply) * Fraction(23, 20)) / COUNTS_MORE
    fixed = fixed_tokens(agent.standing_header())
    first = "please read these notes:\n" + "note " * int((first_request - fixed - 8) * 4 / 5)

    assert run(agent.run_turn(first)).reason == "completed"
    session = harness.session
    (answer,) = session.of_type(AssistantMessageEvent)
    assert answer.data.usage is not None
    counted_first = answer.data.usage.request_tokens()
    uncalibrated = counted_first + session.node_tokens(answer.seq) + incoming
    assert uncalibrated < threshold  # what the check before this change saw: no pass
    calibration = session.measure().calibration
    sent_first = harness.provider.requests[0]
    assert calibration is not None
    assert calibration.estimated == (  # dsh's heuristic of the very request that went out
        system_tokens(sent_first.system)
        + tools_tokens(sent_first.tools)
        + sum(message_tokens(m) for m in sent_first.messages)
    )
    assert calibration.reported == int(calibration.estimated * COUNTS_MORE)
    as_counted = counted_first + (session.node_tokens(answer.seq) + incoming) * COUNTS_MORE
    assert as_counted >= threshold  # what the server would have counted, sent as it was

    assert run(agent.run_turn(second)).reason == "completed"
    start = next(e.seq for e in session.of_type(TurnStartEvent) if e.data.turn == 2)
    reply_seq = session.of_type(AssistantMessageEvent)[-1].seq
    passes = [e for e in session.of_type(CompactionSummaryEvent) if start < e.seq < reply_seq]
    assert passes, "the history was compacted before the request that carries the file"
    sent = harness.provider.requests[-1]
    assert any(CODE.splitlines()[-1] in m.text() for m in sent.messages)  # the file went
    counted = session.of_type(AssistantMessageEvent)[-1].data.usage
    assert counted is not None and counted.request_tokens() < threshold
