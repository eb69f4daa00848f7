"""Online mode: the handoff probe (bench.md, "Online mode").

After each pass, a real model answers up to K questions about facts planted so far, from the
request context only (the current surface under the conversation's own header) plus the recall
tools when the backend offers them. Answers are scored by exact match on the anchor (the newest
value for a superseded fact; naming an older value counts as stale). The probe also reports how
often the model used the recall tools and whether what it recalled ended up in its answer.

Probe calls are not logged to the session (the scripted conversation must not see them) and are
left out of every cost and cache figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dsh.agent import Agent
from dsh.bench.options import OnlineOptions
from dsh.bench.results import OnlineSummary, ProbeOutcome
from dsh.bench.scenario import PlantedFact, Scenario
from dsh.bench.scorers import message_text
from dsh.bench.trace import checkpoint_class
from dsh.errors import ProviderError
from dsh.events import (
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSource,
    UserSource,
)
from dsh.llm.assemble import StreamAssembler
from dsh.llm.retry import stream_with_retry
from dsh.llm.types import ModelRequest, Provider
from dsh.recall import RECALL_TOOL_NAMES, HistoryReadTool, HistorySearchTool
from dsh.surface import Session
from dsh.tools.base import ToolContext
from dsh.tools.registry import parse_arguments

MAX_ROUNDS = 4
ANSWER_TOKENS = 400
QUESTION = (
    "Handoff check — answer from this conversation only{tools}: {question} "
    "Reply with the exact literal value only."
)


@dataclass(slots=True)
class ProbeRecord:
    pass_number: int
    turn: int
    fact: str
    expected: str
    answer: str = ""
    correct: bool = False
    stale: bool = False
    """The answer names a superseded value."""
    recall_calls: int = 0
    recalled_expected: bool = False
    """A recall tool output held the expected anchor."""
    in_context: bool = False
    """The expected anchor was verbatim in an original message of the probed context."""
    error: str | None = None

    def outcome(self) -> ProbeOutcome:
        """This question as ``online.records[]`` reports it (the answer cut to 300 chars)."""
        return ProbeOutcome(
            pass_number=self.pass_number,
            turn=self.turn,
            fact=self.fact,
            correct=self.correct,
            stale=self.stale,
            recall_calls=self.recall_calls,
            recalled_expected=self.recalled_expected,
            in_context=self.in_context,
            answer=self.answer[:300],
            error=self.error,
        )


@dataclass(slots=True)
class HandoffProbe:
    scenario: Scenario
    session: Session
    provider: Provider
    online: OnlineOptions
    records: list[ProbeRecord] = field(default_factory=list)

    def questions(self, turn: int) -> list[tuple[PlantedFact, list[str]]]:
        """(fact to ask about, stale values) for facts planted before ``turn``: one per
        question, the newest planted fact answering it; up to K, oldest first."""
        planted = [f for f in self.scenario.facts if f.turn < turn]
        groups: dict[str, list[PlantedFact]] = {}
        for fact in sorted(planted, key=lambda f: f.turn):
            groups.setdefault(fact.question, []).append(fact)
        chosen = [(facts[-1], [f.anchor for f in facts[:-1]]) for facts in groups.values()]
        chosen.sort(key=lambda item: item[0].turn)
        return chosen[: self.online.questions]

    async def after_pass(self, agent: Agent, turn: int, pass_number: int) -> None:
        for fact, stale in self.questions(turn):
            record = ProbeRecord(pass_number, turn, fact.id, fact.anchor)
            try:
                await self._ask(agent, fact, stale, record)
            except ProviderError as exc:
                record.error = str(exc)
            self.records.append(record)

    async def _ask(
        self, agent: Agent, fact: PlantedFact, stale: list[str], record: ProbeRecord
    ) -> None:
        header = agent.current_header()
        tools = tuple(header.tools or ())
        offered = any(t.get("name") in RECALL_TOOL_NAMES for t in tools)
        messages: list[Message] = list(self.session.surface.messages())
        record.in_context = any(
            checkpoint_class(m) is None and fact.anchor in message_text(m) for m in messages
        )
        hint = " (you may use history_search and history_read)" if offered else ""
        messages.append(
            Message(
                id="probe-question",
                role="user",
                content=(TextBlock(QUESTION.format(tools=hint, question=fact.question)),),
                source=UserSource(),
            )
        )
        ctx = ToolContext(
            workspace=Path("."),
            session_id=self.session.id,
            call_id="probe",
            history=self.session.events,
            history_index=self.session,
        )
        for round_number in range(MAX_ROUNDS):
            request = ModelRequest(
                provider=self.provider.name,
                model=self.online.model,
                system=header.system,
                tools=tools,
                messages=tuple(messages),
                params={"max_tokens": ANSWER_TOKENS},
            )
            assembler = StreamAssembler()
            async for event in stream_with_retry(self.provider, request, history=()):
                assembler.feed(event)
            reply = assembler.message(
                f"probe-{round_number}", self.provider.name, self.online.model
            )
            calls = reply.tool_calls()
            if not calls or round_number == MAX_ROUNDS - 1:
                record.answer = reply.text()
                break
            messages.append(reply)
            for call in calls:
                messages.append(await self._answer_call(call, ctx, fact, record))
        record.correct = fact.anchor in record.answer
        record.stale = any(value in record.answer for value in stale)

    async def _answer_call(
        self, call: ToolCallBlock, ctx: ToolContext, fact: PlantedFact, record: ProbeRecord
    ) -> Message:
        """Run a recall tool the model called (any other tool is refused) as a tool result."""
        if call.name in RECALL_TOOL_NAMES:
            record.recall_calls += 1
            search = HistorySearchTool()
            tool = search if call.name == search.name else HistoryReadTool()
            try:
                output = await tool.run(parse_arguments(call.arguments, tool.parameters), ctx)
                text, is_error = output.text, output.is_error
            except Exception as exc:  # a bad argument is the model's problem
                text, is_error = f"{type(exc).__name__}: {exc}", True
            record.recalled_expected |= fact.anchor in text
        else:
            text, is_error = "this tool is not available during the handoff check", True
        block = ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text),), is_error=is_error)
        return Message(
            id=f"probe-result-{call.id}",
            role="tool",
            content=(block,),
            source=ToolSource(call_id=call.id),
        )

    def summary(self) -> OnlineSummary:
        done = [r for r in self.records if r.error is None]
        recalling = [r for r in done if r.recall_calls]
        return OnlineSummary(
            questions=len(self.records),
            errors=len(self.records) - len(done),
            correct=sum(r.correct for r in done) / len(done) if done else None,
            stale=sum(r.stale for r in done),
            recall_usage=len(recalling) / len(done) if done else None,
            recalled_used=(
                sum(r.correct and r.recalled_expected for r in recalling) / len(recalling)
                if recalling
                else None
            ),
            records=[r.outcome() for r in self.records],
        )
