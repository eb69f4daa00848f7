"""The ``scripted`` provider: a keyless, deterministic test double driven by a script file.

A script is a list of entries (JSON or YAML)::

    - text: "Let me look."
      reasoning: "the user wants the file"
      toolCalls: [{name: read_file, arguments: {path: a.txt}}]
      usage: {inputTokens: 120, outputTokens: 9}
      delayMs: 50
    - text: "A long answer that the output limit cuts"
      finish: max-tokens
      chunkDelayMs: 100
    - error: {code: RATE_LIMITED, message: "slow down"}

``delayMs`` is a wait before the reply; ``chunkDelayMs`` a wait before each streamed piece after
the first (pieces are ``chunk_size`` characters; 0: one piece per block), so a test can act on
a half-streamed reply. ``finish`` is the finish reason reported (default: ``tool-calls`` when
the entry calls tools, else ``stop``), e.g. ``max-tokens`` for a reply cut at the output limit.

Written as a mapping, ``{entries: [...], summaries: [...], whenOver: "..."}``, a script may also
answer compaction calls (``summaries``) and say what a call past its last entry is told
(``whenOver``).

The n-th model call of a session gets entry n, where n is the number of ``assistant/message``
and ``request/error`` events already in the log (docs/architecture.md, "Keyless everything"),
so a resumed session, or another process, picks up where the log left off.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from dsh.config.small_file import UnreadableFile, read_named_file
from dsh.errors import ConfigError, ProviderError
from dsh.events import (
    AssistantMessageEvent,
    CompactionSummaryEvent,
    Event,
    Message,
    RequestErrorEvent,
    Usage,
    encode_json,
)
from dsh.llm.assemble import StreamAssembler
from dsh.llm.cache_sim import (
    CacheRule,
    digested,
    make_cache,
    message_segment,
    request_segments,
)
from dsh.llm.errors import ErrorCode, provider_error
from dsh.llm.types import (
    Finish,
    FinishReason,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)
from dsh.surface.tokens import message_tokens, system_tokens, tools_tokens

SCRIPT_EXHAUSTED = "SCRIPT_EXHAUSTED"


class _ScriptStruct(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class ScriptToolCall(_ScriptStruct, frozen=True):
    """A tool call the scripted model makes; ``arguments`` is raw JSON text or an object."""

    name: str
    arguments: str | dict[str, Any] = "{}"

    def arguments_json(self) -> str:
        """The arguments as the model would stream them (objects encoded compactly)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return encode_json(self.arguments).decode()


class ScriptError(_ScriptStruct, frozen=True):
    """A failed model call; retryable iff the code is in ``RETRYABLE_CODES``."""

    code: ErrorCode
    message: str = "scripted provider error"


class ScriptEntry(_ScriptStruct, rename="camel", frozen=True):
    """One scripted model call: a reply (text, reasoning, tool calls, usage) or an error."""

    text: str | None = None
    reasoning: str | None = None
    tool_calls: tuple[ScriptToolCall, ...] = ()
    usage: Usage | None = None
    error: ScriptError | None = None
    delay_ms: Annotated[int, msgspec.Meta(ge=0)] = 0
    chunk_delay_ms: Annotated[int, msgspec.Meta(ge=0)] = 0
    finish: FinishReason | None = None


# ---- loading --------------------------------------------------------------------------------


SCRIPT_KEYS = frozenset({"entries", "summaries", "whenOver"})
"""The keys of a script written as a mapping."""


def parse_script(data: object, *, source: str = "<script>") -> list[ScriptEntry]:
    """Validate decoded script data: a list of entries, or ``{"entries": [...]}``.

    Raises ``ConfigError`` naming ``source`` and the index of the bad entry.
    """
    if isinstance(data, Mapping) and set(data) <= SCRIPT_KEYS and "entries" in data:
        data = data["entries"]
    if not isinstance(data, list):
        raise ConfigError(f"{source}: a script must be a list of entries or {{entries: [...]}}")
    return [_parse_entry(raw, source=source, index=i) for i, raw in enumerate(data)]


def _parse_entry(raw: object, *, source: str, index: int) -> ScriptEntry:
    if isinstance(raw, ScriptEntry):
        entry = raw
    else:
        try:
            entry = msgspec.convert(raw, ScriptEntry)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"{source}: entry {index}: {exc}") from exc
    if entry.error is not None and (
        entry.text
        or entry.reasoning
        or entry.tool_calls
        or entry.usage is not None
        or entry.finish is not None
    ):
        raise ConfigError(
            f"{source}: entry {index}: an error entry cannot also carry text, reasoning, "
            "toolCalls, usage or finish"
        )
    return entry


def load_script(path: str | Path) -> list[ScriptEntry]:
    """Read a script file's conversation entries (see ``load_script_sections``)."""
    return load_script_sections(path)[0]


def load_script_sections(
    path: str | Path,
) -> tuple[list[ScriptEntry], list[ScriptEntry], str | None]:
    """Read a script file; JSON or YAML by extension (``.json``, ``.yaml``, ``.yml``).

    Returns (entries, summaries, when over): ``summaries`` answer compaction calls, in order,
    when the file is ``{entries: [...], summaries: [...]}``; ``whenOver`` (a string) is what a
    model call past the last entry is told, in its ``SCRIPT_EXHAUSTED`` error, instead of the
    count of entries (the demo's script says the demo is over and how to go on)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise ConfigError(f"{path}: a script must be a .json, .yaml or .yml file")
    try:
        raw = read_named_file(path).decode("utf-8")
    except UnreadableFile as exc:
        raise ConfigError(f"{path}: cannot read script: {exc.reason}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: a script must be UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
            f"offset {exc.start})"
        ) from None
    import yaml  # type: ignore[import-untyped,unused-ignore]  # here: a start on a real route needs none

    try:
        data = json.loads(raw) if suffix == ".json" else yaml.safe_load(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid {suffix[1:].upper()}: {exc}") from exc
    summaries: list[ScriptEntry] = []
    when_over: str | None = None
    if isinstance(data, Mapping) and "summaries" in data:
        summaries = parse_script(data["summaries"], source=f"{path} (summaries)")
    if isinstance(data, Mapping) and "whenOver" in data:
        when_over = data["whenOver"]
        if not isinstance(when_over, str) or not when_over.strip():
            raise ConfigError(f"{path}: whenOver must be a non-empty string")
    return parse_script(data, source=str(path)), summaries, when_over


# ---- serving --------------------------------------------------------------------------------


def count_model_calls(history: Sequence[Event]) -> int:
    """Model calls already answered in a log: ``assistant/message`` + ``request/error``,
    where the partial message a provider failure left (``errorCode``) belongs to its error."""
    return sum(
        isinstance(e, RequestErrorEvent)
        or (isinstance(e, AssistantMessageEvent) and e.data.error_code is None)
        for e in history
    )


class _Counter:
    """A count of matching events in a log, kept incrementally: the log only grows, so each
    call looks at the events appended since the last one (O(1) per model call, amortized)
    instead of the whole log. Another log (or a shorter one) starts the count over."""

    def __init__(self, matches: Callable[[Event], bool]) -> None:
        self._matches = matches
        self._log: Sequence[Event] | None = None
        self._seen = 0
        self._count = 0

    def __call__(self, history: Sequence[Event]) -> int:
        if history is not self._log or len(history) < self._seen:
            self._log, self._seen, self._count = history, 0, 0
        matches = self._matches
        self._count += sum(1 for e in history[self._seen :] if matches(e))
        self._seen = len(history)
        return self._count


def _is_model_call(event: Event) -> bool:
    return isinstance(event, AssistantMessageEvent | RequestErrorEvent)


def _is_logged_summary_call(event: Event) -> bool:
    return isinstance(event, CompactionSummaryEvent) and event.data.llm_stream_call


def _pieces(text: str, size: int) -> list[str]:
    if size <= 0 or len(text) <= size:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _request_tokens(request: ModelRequest) -> int:
    return (
        tools_tokens(request.tools)
        + system_tokens(request.system)
        + sum(message_tokens(m) for m in request.messages)
    )


class ScriptedProvider:
    """Answers model calls from a script (see the module docstring).

    Which entry answers is derived from ``history`` alone, so the provider is stateless across
    processes. Two things are per instance: ``requests`` (the requests received, for tests
    that compare them with requests rebuilt from the log: every one, or with ``keep_requests``
    the last that many — a real ``--script`` run keeps none, so a long run's memory tracks its
    log rather than every request it sent, tool specs and system prompt included) and the
    simulated prompt cache (``cache="deepseek"``), which starts cold — a resumed session sees a
    cold cache.
    """

    def __init__(
        self,
        entries: Iterable[ScriptEntry | Mapping[str, Any]],
        *,
        name: str = "scripted",
        model: str = "scripted",
        cache: Literal["deepseek"] | None = None,
        chunk_size: int = 0,
        summaries: Iterable[ScriptEntry | Mapping[str, Any]] = (),
        when_over: str | None = None,
        keep_requests: int | None = None,
    ) -> None:
        self.entries: list[ScriptEntry] = parse_script(list(entries), source="<entries>")
        self.summaries: list[ScriptEntry] = parse_script(list(summaries), source="<summaries>")
        self._summaries_served = 0
        self.when_over = when_over
        """What a model call past the last entry is told (``whenOver``); None: the counts."""
        self.name = name
        self.model = model
        self.chunk_size = chunk_size
        self.requests: list[ModelRequest] = []
        self.keep_requests = keep_requests
        """How many of the latest requests ``requests`` keeps (None: every one)."""
        self._cache: CacheRule | None = make_cache(cache) if cache is not None else None
        self._model_calls = _Counter(_is_model_call)
        self._logged_summaries = _Counter(_is_logged_summary_call)

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> ScriptedProvider:
        """A provider over a script file; ``options`` as for the constructor."""
        entries, summaries, when_over = load_script_sections(path)
        return cls(entries, summaries=summaries, when_over=when_over, **options)

    def remaining(self, history: Sequence[Event]) -> int:
        """Entries not yet used by the log ``history`` (0 when the script was used up)."""
        return max(0, len(self.entries) - self._model_calls(history))

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        """Stream entry n (n = model calls in ``history``, counted when the call is made).

        Compaction calls are answered from ``summaries`` instead: the k-th call gets summary k,
        k = summaries already logged as one model call (``llmStreamCall``), or more when several
        calls of one pass are in flight before any is logged."""
        self._keep(request)
        if request.purpose == "compaction":
            k = max(self._logged_summaries(history), self._summaries_served)
            self._summaries_served = k + 1
            return self._serve_summary(k)
        return self._serve(self._model_calls(history), request)

    def _keep(self, request: ModelRequest) -> None:
        if self.keep_requests is None:
            self.requests.append(request)
        elif self.keep_requests > 0:
            self.requests.append(request)
            del self.requests[: -self.keep_requests]

    async def _serve_summary(self, k: int) -> AsyncIterator[StreamEvent]:
        if k >= len(self.summaries):
            raise ProviderError(
                SCRIPT_EXHAUSTED,
                f"the script has {len(self.summaries)} summaries; this is compaction call {k + 1}",
                retryable=False,
            )
        entry = self.summaries[k]
        if entry.delay_ms:
            await asyncio.sleep(entry.delay_ms / 1000)
        if entry.error is not None:
            raise provider_error(entry.error.code, entry.error.message)
        for piece in _pieces(entry.text or "", self.chunk_size):
            yield TextDelta(piece)
        if entry.usage is not None:
            yield UsageReport(entry.usage)
        yield Finish("stop")

    async def _serve(self, n: int, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if n >= len(self.entries):
            raise ProviderError(
                SCRIPT_EXHAUSTED,
                self.when_over
                or f"the script has {len(self.entries)} entries and the log already holds {n} "
                "model calls; nothing is left to answer this one",
                retryable=False,
            )
        entry = self.entries[n]
        if entry.delay_ms:
            await asyncio.sleep(entry.delay_ms / 1000)
        if entry.error is not None:
            raise provider_error(entry.error.code, entry.error.message)
        events = self._reply_events(n, entry)
        reply = StreamAssembler().feed_all(events).message(f"scripted-{n}", self.name, self.model)
        usage = self._usage(request, reply)
        for i, event in enumerate(events):
            if i and entry.chunk_delay_ms:
                await asyncio.sleep(entry.chunk_delay_ms / 1000)
            yield event
        yield UsageReport(entry.usage if entry.usage is not None else usage)
        yield Finish(entry.finish or ("tool-calls" if entry.tool_calls else "stop"))

    def _reply_events(self, n: int, entry: ScriptEntry) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if entry.reasoning:
            events += [ReasoningDelta(p) for p in _pieces(entry.reasoning, self.chunk_size)]
        if entry.text:
            events += [TextDelta(p) for p in _pieces(entry.text, self.chunk_size)]
        for i, call in enumerate(entry.tool_calls):
            first, *rest = _pieces(call.arguments_json(), self.chunk_size)
            events.append(ToolCallDelta(i, id=f"call_{n}_{i}", name=call.name, arguments=first))
            events += [ToolCallDelta(i, arguments=p) for p in rest]
        return events

    def _usage(self, request: ModelRequest, reply: Message) -> Usage:
        """Heuristic usage (docs/architecture.md, "Token accounting"); with a simulated cache, input
        excludes the cache hit.

        The cache is consulted even when the entry scripts its own usage, so its state follows
        the conversation either way.
        """
        output = message_tokens(reply)
        if self._cache is None:
            return Usage(input_tokens=_request_tokens(request), output_tokens=output)
        segments = digested(request_segments(request))  # the cache keeps no message's text
        hit = self._cache.serve(segments)
        self._cache.save_output([*segments, *digested([message_segment(reply)])])
        total = sum(tokens for _, tokens in segments)
        return Usage(input_tokens=total - hit, output_tokens=output, cache_read_tokens=hit)
