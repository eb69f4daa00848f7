"""``ModelSummarizer``: one model call per summary task, built by ``build_summary_request``.

``build_summary_request`` is the ONE function that lays a task out as a model call; the bench
bills exactly what it returns. Error, empty, truncated or timed-out output is a failure.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import msgspec

from dsh.compaction.prompts import SUMMARISER_SYSTEM, context_for, instruction_for
from dsh.compaction.summarizer import SummaryOutput, SummaryTask
from dsh.errors import ProviderError
from dsh.events import Event, Message, ReasoningBlock, TextBlock, UserSource
from dsh.llm.assemble import StreamAssembler
from dsh.llm.errors import ErrorCode, provider_error
from dsh.llm.registry import default_max_output_tokens
from dsh.llm.retry import stream_with_retry
from dsh.llm.types import ModelRequest, Provider
from dsh.transcript import render_message

OUTPUT_TOKEN_SLACK = 2
"""The model's ``max_tokens`` is the task budget times this, so a summary that runs a little
long is cut by our cap, not truncated mid-sentence by the provider."""

DEFAULT_TIMEOUT_S = 120.0


def _user(id_: str, text: str) -> Message:
    return Message(id=id_, role="user", content=(TextBlock(text=text),), source=UserSource())


def as_transcript(message: Message) -> Message:
    """``message`` as the transcript renders it, one text block (reasoning left out), for a
    compact call: that call offers no tools, and a provider may refuse tool-call and
    tool-result blocks in a request without tools (Anthropic answers 400). Same id; a tool
    result becomes a user message."""
    said = tuple(b for b in message.content if type(b) is not ReasoningBlock)
    text = render_message(msgspec.structs.replace(message, content=said))
    role = "assistant" if message.role == "assistant" else "user"
    return msgspec.structs.replace(message, role=role, content=(TextBlock(text=text),))


SLICE_LEAD = "The conversation slice follows."
"""Opens a compact call that has no shared context and whose slice starts with a model
message: a provider may refuse a request whose first message is not the user's."""


def compact_lead(context: str | None, messages: Sequence[Message]) -> tuple[Message, ...]:
    """What a compact call sends before its slice: the shared context, or ``SLICE_LEAD`` when
    there is none and the slice does not start with a user message, or nothing."""
    if context:
        return (_user("compaction-context", context),)
    if messages and messages[0].role != "user":
        return (_user("compaction-context", SLICE_LEAD),)
    return ()


def output_budget(task: SummaryTask, max_output: int | None = None) -> int:
    """The ``max_tokens`` a call for ``task`` asks for: the budget with slack, within the room
    a riding call has left and the route's ``max_output`` (never below the budget itself)."""
    budget = task.max_tokens * OUTPUT_TOKEN_SLACK
    for limit in (task.output_limit, max_output):
        if limit is not None:
            budget = max(task.max_tokens, min(budget, limit))
    return budget


def build_summary_request(
    task: SummaryTask, *, provider: str, model: str, max_output: int | None = None
) -> ModelRequest:
    """The exact model call for a task.

    - ``summary`` (basic backend): the conversation's system prompt, tools and shadowed
      messages, then the instruction — a prefix of the conversation request.
    - ``stub`` / ``state``, ``riding`` layout (the summariser is the conversation's own route):
      the conversation request as sent (system, tools, every surface message), then one
      instruction naming the slice ``messages #a–#b`` — every call of a pass extends the last
      conversation request, so they share its cached prefix.
    - ``pass``, ``riding``: the same conversation, then one instruction naming every stub's
      slice and the state's span, answered in labelled sections — the whole pass in one call.
    - ``stub`` / ``state`` / ``pass``, ``compact`` layout (a different summariser model): a
      fixed system prompt and no tools, the context the stubs share (pass-start state,
      committed keyword lines, recent stubs), the slice as transcript text, one message per
      message (``as_transcript``; for a pass, the span once), then the instruction.
    """
    instruction = _user("compaction-instruction", instruction_for(task))
    if task.kind == "summary":
        system, tools = task.system, task.tools
        messages: tuple[Message, ...] = (*task.messages, instruction)
    elif task.layout == "riding":
        system, tools = task.system, task.tools
        messages = (*task.conversation, instruction)
    else:
        system, tools = SUMMARISER_SYSTEM, ()
        lead = compact_lead(context_for(task), task.messages)
        messages = (*lead, *(as_transcript(m) for m in task.messages), instruction)
    return ModelRequest(
        provider=provider,
        model=model,
        system=system,
        tools=tools,
        messages=messages,
        params={"max_tokens": output_budget(task, max_output)},
        purpose="compaction",
        answers=max(1, len(task.parts)),
    )


class ModelSummarizer:
    reads_rarity = False
    """A model's answer depends on the request alone: the backend ranks literals beside it."""

    def __init__(
        self,
        provider: Provider,
        model: str,
        *,
        history: Sequence[Event] = (),
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        max_output_tokens: int | None = None,
        context_window: int | None = None,
    ) -> None:
        self.provider = provider
        self.context_window = context_window
        """The model's own window when it is not the conversation's (None: the conversation's):
        the backend splits a pass's calls to fit it."""
        self.history = history
        """The session log (a live view): keyless providers count compaction calls in it."""
        self.name = provider.name
        self.model = model
        self.timeout_s = timeout_s
        self.max_output_tokens = max_output_tokens or default_max_output_tokens(
            provider.name, model
        )
        """Most output tokens one call may ask for (None: unknown, no bound): a pass whose
        one-call answer would need more is written call by call."""

    @property
    def route(self) -> tuple[str, str]:
        """``(provider, model)`` this summariser calls (compared with the conversation's)."""
        return (self.name, self.model)

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        request = build_summary_request(
            task, provider=self.name, model=self.model, max_output=self.max_output_tokens
        )
        assembler = StreamAssembler()
        try:
            async with asyncio.timeout(self.timeout_s):
                async for event in stream_with_retry(self.provider, request, history=self.history):
                    assembler.feed(event)
        except TimeoutError as exc:
            raise provider_error(
                ErrorCode.TIMEOUT, f"the summariser did not answer within {self.timeout_s:g} s"
            ) from exc
        text = without_thinking(assembler.text).strip()
        if assembler.finish == "max-tokens":
            raise provider_error(
                ErrorCode.INVALID_RESPONSE, "the summary was cut off at the output limit"
            )
        if assembler.finish == "filtered":
            raise provider_error(
                ErrorCode.INVALID_RESPONSE, "the provider stopped the summary (content filter)"
            )
        if not text:
            raise ProviderError(str(ErrorCode.INVALID_RESPONSE), "the summariser returned no text")
        return SummaryOutput(
            text=text,
            provider=self.name,
            model=self.model,
            usage=assembler.usage,
            raw_output=assembler.text,
        )


_THINKING = re.compile(r"<(think|thinking)>.*?(?:</\1>|\Z)", re.IGNORECASE | re.DOTALL)
"""A thinking model's monologue written into its answer: up to its closing tag, or to the end
when it never closes (an answer cut inside it holds no summary after it)."""


def without_thinking(text: str) -> str:
    """``text`` without the ``<think>…</think>`` blocks a thinking model writes into its answer
    (a leading one the stream already took as reasoning; one after each ``=== stub N ===``
    marker of a one-call pass, or a ``<thinking>`` one, it did not), so no monologue ("Okay, the
    user wants me to summarise…") becomes a frozen stub or the state. The log keeps the answer
    as it came (``raw_output``)."""
    return _THINKING.sub("", text)
