"""``ModelSummarizer``: one model call per summary task.

The call is built as a prefix of the conversation request (same system prompt and tools, the
slice's messages in order) with the instruction as the last user message, so a provider's prompt
cache can serve the shared prefix. Error, empty or truncated output is a failure.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.compaction.prompts import instruction_for
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


class ModelSummarizer:
    def __init__(self, provider: Provider, model: str, *, history: Sequence[Event] = ()) -> None:
        self.provider = provider
        self.history = history
        """The session log (a live view): keyless providers count compaction calls in it."""
        self.name = provider.name
        self.model = model

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        instruction = Message(
            id="compaction-instruction",
            role="user",
            content=(TextBlock(text=instruction_for(task)),),
            source=UserSource(),
        )
        request = ModelRequest(
            provider=self.name,
            model=self.model,
            system=task.system,
            tools=task.tools,
            messages=(*task.messages, instruction),
            params={"max_tokens": task.max_tokens * OUTPUT_TOKEN_SLACK},
            purpose="compaction",
        )
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
