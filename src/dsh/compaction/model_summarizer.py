"""``ModelSummarizer``: one model call per summary task.

The call is built as a prefix of the conversation request (same system prompt and tools, the
slice's messages in order) with the instruction as the last user message, so a provider's prompt
cache can serve the shared prefix. Error, empty or truncated output is a failure.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.compaction.prompts import SUMMARISER_SYSTEM, context_for, instruction_for
from dsh.compaction.summarizer import SummaryOutput, SummaryTask
from dsh.errors import ProviderError
from dsh.events import Event, Message, TextBlock, UserSource
from dsh.llm.assemble import StreamAssembler
from dsh.llm.errors import ErrorCode, provider_error
from dsh.llm.retry import stream_with_retry
from dsh.llm.types import ModelRequest, Provider

OUTPUT_TOKEN_SLACK = 2
"""The model's ``max_tokens`` is the task budget times this, so a summary that runs a little
long is cut by our cap, not truncated mid-sentence by the provider."""


def _user(id_: str, text: str) -> Message:
    return Message(id=id_, role="user", content=(TextBlock(text=text),), source=UserSource())


def summary_request(task: SummaryTask, *, provider: str, model: str) -> ModelRequest:
    """The model call for a task.

    ``summary`` (basic backend): the conversation's own system prompt, tools and messages, then
    the instruction — a prefix of the conversation request. ``stub`` / ``state`` (recallable):
    a fixed system prompt, then the context sibling calls of a pass share (pass-start state,
    committed keyword lines, recent stubs), then the slice, then the instruction.
    """
    instruction = _user("compaction-instruction", instruction_for(task))
    if task.kind == "summary":
        system, tools = task.system, task.tools
        messages: tuple[Message, ...] = (*task.messages, instruction)
    else:
        system, tools = SUMMARISER_SYSTEM, ()
        context = context_for(task)
        lead = (_user("compaction-context", context),) if context else ()
        messages = (*lead, *task.messages, instruction)
    return ModelRequest(
        provider=provider,
        model=model,
        system=system,
        tools=tools,
        messages=messages,
        params={"max_tokens": task.max_tokens * OUTPUT_TOKEN_SLACK},
        purpose="compaction",
    )


class ModelSummarizer:
    def __init__(self, provider: Provider, model: str, *, history: Sequence[Event] = ()) -> None:
        self.provider = provider
        self.history = history
        """The session log (a live view): keyless providers count compaction calls in it."""
        self.name = provider.name
        self.model = model

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        request = summary_request(task, provider=self.name, model=self.model)
        assembler = StreamAssembler()
        async for event in stream_with_retry(self.provider, request, history=self.history):
            assembler.feed(event)
        text = assembler.text.strip()
        if assembler.finish == "max-tokens":
            raise provider_error(
                ErrorCode.INVALID_RESPONSE, "the summary was cut off at the output limit"
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
