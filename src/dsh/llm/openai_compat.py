"""OpenAI-compatible chat completions (DeepSeek, OpenAI, Ollama, vLLM, llama.cpp server).

The only module that knows the chat-completions wire shape. Requests are built from a
``ModelRequest``; the SSE stream is turned into ``StreamEvent``s; every SDK error is mapped by
``dsh.llm.errors.map_openai_error``. A client for a server that is not OpenAI's sends none of the
headers the SDK adds from the user's OpenAI environment, nor the SDK's platform headers
(``dsh.llm.sdk_environment``); every server gets the route's ``provider.headers``. The SDK
is imported, and the client made, on first use (``dsh.llm.sdk_client``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from dsh.errors import ConfigError, ProviderError
from dsh.events import Event, Message, ReasoningBlock, TextBlock, ToolResultBlock
from dsh.events import Usage as UsageStruct
from dsh.llm.errors import (
    EVENT_STREAM,
    ErrorCode,
    base_url_refusal,
    client_credentials,
    content_type,
    map_openai_error,
    provider_error,
    unfinished_stream,
    without_credentials,
)
from dsh.llm.registry import OPENAI_HOST, on_host
from dsh.llm.sdk_client import ClientOnFirstUse, LazyClient
from dsh.llm.sdk_environment import (
    OPENAI_CUSTOM_HEADERS,
    cancelling_headers,
    platform_headers_dropped,
    request_platform_headers_dropped,
)
from dsh.llm.stream_repair import CallSlots, OutputBound, ThinkSplitter, wire_count
from dsh.llm.types import (
    Finish,
    FinishReason,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    TextWasReasoning,
    ToolCallDelta,
    UsageReport,
)

if TYPE_CHECKING:  # the SDK is imported when the client is made (``dsh.llm.sdk_client``)
    import openai

    Sdk = tuple[openai.AsyncOpenAI, dict[str, openai.Omit]]
    """The client, and each request's ``extra_headers``: what the SDK would add to a request
    and this server must not get."""

TOOL_ERROR_PREFIX = "ERROR (the tool call failed): "
"""Prepended to an error tool result so the model sees the call failed."""

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "length": "max-tokens",
    "content_filter": "filtered",
}


class OpenAICompatProvider(ClientOnFirstUse["Sdk"]):
    """A chat-completions endpoint. ``name`` is the provider name (``"deepseek"`` turns on
    passing reasoning back); ``model`` is used when a request does not name one; ``headers``
    (``provider.headers``) go with every request."""

    def __init__(
        self,
        name: str,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: openai.AsyncOpenAI | None = None,
        default_params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._refusal: ProviderError | None = None
        """The error each call fails with when no request can be sent to ``base_url``."""
        self._sdk: LazyClient[Sdk] | None = None
        """The client, made on first use (None when the base URL takes no request)."""
        if client is not None:
            given = client
            self._sdk = LazyClient(lambda: (given, {}))
        else:
            if not base_url:
                raise ConfigError(f"provider {name!r} needs a base_url")
            self._refusal = base_url_refusal(base_url)
            if self._refusal is None:
                url, key, extra = base_url, api_key or "none", dict(headers or {})
                self._sdk = LazyClient(lambda: _sdk_client(url, key, extra))
        self.name = name
        self.model = model
        self._base_url = base_url
        """Named when an answer is not an event stream (None: a client was given)."""
        self._header_names = tuple(headers or {})
        """The ``provider.headers`` names: their values (the client's) are masked out of every
        error's text, as its key is (a server may echo what it got)."""
        self._keyless = not api_key or api_key == "none"
        """No key is sent (a local server): a refusal for want of one says how to give it."""
        self._default_params = dict(default_params or {})

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        """Stream one model call as ``StreamEvent``s; failures raise ``ProviderError``."""
        model = request.model or self.model
        if not model:
            raise ConfigError(f"provider {self.name!r} needs a model")
        if self._sdk is None:  # the base URL takes no request: an error of each call
            assert self._refusal is not None
            raise self._refusal.with_traceback(None)
        client, request_headers = await self._sdk.when_made()
        # Params go in the body verbatim: compatible servers accept keys the SDK has no
        # argument for (top_k, thinking, …), and the SDK rejects unknown keyword arguments.
        body: dict[str, Any] = {**self._default_params, **request.params}
        if self.name == "openai" and "max_tokens" in body:
            # OpenAI's own API refuses max_tokens for its newer models; its successor is this.
            body["max_completion_tokens"] = body.pop("max_tokens")
        if request.tools:
            body["tools"] = [tool_to_wire(t) for t in request.tools]
        received, opened = 0, False  # characters streamed; the answer's headers came
        try:
            chunks = await client.chat.completions.create(
                model=model,
                messages=to_wire_messages(request, reasoning_back=self.name == "deepseek"),
                stream=True,
                stream_options={"include_usage": True},
                extra_body=body,
                extra_headers=request_headers,
            )
            opened = True
            # Closing the stream releases the connection when the caller stops early.
            async with chunks:
                media = content_type(chunks)
                source: AsyncIterator[Any] = chunks
                if _media(media) == "application/json":  # a server that ignored stream: true
                    source = _whole_reply(await chunks.response.aread(), media, self._base_url)
                events = _events(source, media, self._base_url, _output_bound(body))
                async for event in events:
                    received += _received(event)
                    yield event
        except _NoFinish:
            raise closed_mid_reply(received, no_finish=True) from None
        except ProviderError as exc:
            raise without_credentials(exc, client_credentials(client, self._header_names)) from None
        except Exception as exc:
            error = map_openai_error(exc)
            if opened and error.code == ErrorCode.CONNECTION and error.retryable:
                error = closed_mid_reply(received)  # the answer's body broke off
            if self._keyless and error.code == ErrorCode.AUTH:
                error = ProviderError(
                    error.code, f"{error.detail} ({KEYLESS_HINT})", status=error.status
                )
            raise without_credentials(
                error, client_credentials(client, self._header_names)
            ) from exc


def _media(content_type: str | None) -> str:
    return (content_type or "").partition(";")[0].strip().lower()


async def _whole_reply(body: bytes, media: str | None, base_url: str | None) -> AsyncIterator[Any]:
    """A whole ``chat.completion`` (a server or proxy that ignored ``stream: true``) as the one
    chunk it would have streamed: each choice's ``message`` as its ``delta``, its tool calls
    numbered, a missing finish a ``stop`` (the reply is whole). A body that is not one is what
    ``unfinished_stream`` says (not an event stream: check the base URL)."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not any(
        isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices
    ):
        raise unfinished_stream("finish reason", media, base_url)
    assert isinstance(data, dict)
    chunk = SimpleNamespace(choices=[], usage=_namespace(data.get("usage")))
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        calls = [c for c in message.get("tool_calls") or () if isinstance(c, dict)]
        delta = _namespace({**message, "tool_calls": None})
        delta.content = message.get("content")
        delta.tool_calls = [_whole_call(n, call) for n, call in enumerate(calls)]
        finish = choice.get("finish_reason") or "stop"
        chunk.choices.append(
            SimpleNamespace(index=choice.get("index"), delta=delta, finish_reason=finish)
        )
    yield chunk


def _whole_call(index: int, call: dict[str, Any]) -> SimpleNamespace:
    """A whole reply's tool call as its one streamed delta (arguments as sent: an object is
    ``arguments_text``'s to write out)."""
    fn = call.get("function")
    fn = fn if isinstance(fn, dict) else {}
    function = SimpleNamespace(name=fn.get("name"), arguments=fn.get("arguments"))
    return SimpleNamespace(index=index, id=call.get("id"), function=function)


def _namespace(value: Any) -> Any:
    """A JSON object as attributes, as the SDK's chunk types read (nested objects too)."""
    if isinstance(value, dict):
        return SimpleNamespace(**{str(k): _namespace(v) for k, v in value.items()})
    return value


def _output_bound(body: Mapping[str, Any]) -> Any:
    """The output bound the request sends (``OutputBound`` checks it is a count)."""
    return body.get("max_tokens", body.get("max_completion_tokens"))


KEYLESS_HINT = (
    "dsh sent this server no key: name the variable holding it with provider.api_key_env, "
    "OPENAI_API_KEY is sent only to api.openai.com"
)


def _sdk_client(base_url: str, api_key: str, headers: Mapping[str, str]) -> Sdk:
    """Import the SDK and make the client for ``base_url`` (``_client``) and the headers each
    of its requests drops; a URL the SDK's own parser refuses all the same raises its mapped
    ``ProviderError``."""
    import openai

    try:
        client = _client(base_url, api_key, headers)
    except Exception as exc:
        raise map_openai_error(exc) from None
    if on_host(base_url, OPENAI_HOST):
        return client, {}
    return client, request_platform_headers_dropped(openai.Omit())


def _client(base_url: str, api_key: str, headers: Mapping[str, str]) -> openai.AsyncOpenAI:
    """The SDK client for ``base_url``, sending ``api_key`` and ``headers`` on every request.
    The SDK adds headers from the environment: ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID`` as
    ``OpenAI-Organization`` / ``OpenAI-Project``, each line of ``OPENAI_CUSTOM_HEADERS`` (whose
    ``Authorization`` would replace the key), and its platform headers (``X-Stainless-*``).
    They are kept for OpenAI's own server (https on ``api.openai.com``); any other gets none of
    them (a first client, never used, says which platform headers the SDK adds) and
    ``api_key`` as its ``Authorization``. ``OPENAI_API_KEY``, ``OPENAI_ADMIN_KEY`` and
    ``OPENAI_BASE_URL`` are never read: a key and a base URL are always given, and a chat
    request sends no admin key."""
    import openai

    # Retries belong to dsh.llm.retry, which logs them; the SDK must not retry silently.
    if on_host(base_url, OPENAI_HOST):
        return openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, default_headers=dict(headers)
        )
    plain = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    default = {
        **platform_headers_dropped(plain.default_headers, openai.Omit()),
        "OpenAI-Organization": openai.Omit(),
        "OpenAI-Project": openai.Omit(),
        **cancelling_headers(
            OPENAI_CUSTOM_HEADERS, {"Authorization": f"Bearer {api_key}"}, openai.Omit()
        ),
        **headers,
    }
    # An Omit value drops the header (the SDK's own type for the argument says str).
    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key,
        max_retries=0,
        default_headers=cast("dict[str, str]", default),
    )


def tool_to_wire(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A logged tool spec ``{name, description, parameters}`` as a chat-completions tool."""
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": tool.get("parameters", {"type": "object", "properties": {}}),
        },
    }


def to_wire_messages(request: ModelRequest, *, reasoning_back: bool) -> list[Any]:
    """The chat-completions ``messages`` list for ``request`` (system first)."""
    wire: list[dict[str, Any]] = []
    if request.system:
        wire.append({"role": "system", "content": request.system})
    for message in request.messages:
        wire.extend(_message_to_wire(message, reasoning_back=reasoning_back))
    return wire


def _message_to_wire(message: Message, *, reasoning_back: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if message.role == "assistant":
        entry: dict[str, Any] = {"role": "assistant", "content": message.text()}
        calls = message.tool_calls()
        if calls:
            entry["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in calls
            ]
        reasoning = "".join(b.text for b in message.content if isinstance(b, ReasoningBlock))
        if reasoning_back and reasoning:
            entry["reasoning_content"] = reasoning
        return [entry]
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            text = "".join(t.text for t in block.content)
            content = TOOL_ERROR_PREFIX + text if block.is_error else text
            out.append({"role": "tool", "tool_call_id": block.tool_call_id, "content": content})
    texts = [b.text for b in message.content if isinstance(b, TextBlock)]
    if texts or not out:
        role = "system" if message.role == "system" else "user"
        out.append({"role": role, "content": "".join(texts)})
    return out


async def _events(
    chunks: AsyncIterator[Any],
    content_type: str | None = None,
    base_url: str | None = None,
    max_tokens: Any = None,
) -> AsyncIterator[StreamEvent]:
    """Translate chat-completion chunks; usage and finish come last, in that order. An answer
    without a finish is ``unfinished_stream``'s error, said by its ``content_type``. What real
    servers get wrong is put right on the way (``dsh.llm.stream_repair``): tool calls told
    apart by id, object arguments, a leading ``<think>`` block (or the text before a lone
    ``</think>``) and ``delta.reasoning`` as reasoning, only choice 0 read, and a reply
    streamed far past ``max_tokens`` ended as cut at the limit."""
    finish: str | None = None
    usage: Any = None
    calls = CallSlots()
    think = ThinkSplitter()
    bound = OutputBound(max_tokens)
    async for chunk in chunks:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices or ():
            if _another_choice(choice):
                continue
            delta = choice.delta
            events: list[TextDelta | ReasoningDelta | TextWasReasoning | ToolCallDelta] = []
            reasoning = _reasoning(delta)
            if reasoning:
                events.extend(think.settle())  # the server's own: the content is the answer
                events.append(ReasoningDelta(reasoning))
            if isinstance(delta.content, str) and delta.content:
                events.extend(think.feed(delta.content))
            for call in delta.tool_calls or ():
                events.extend(think.settle())  # a </think> after a call is text
                fn = call.function
                events.append(
                    calls.delta(
                        getattr(call, "index", None),
                        getattr(call, "id", None),
                        getattr(fn, "name", None),
                        getattr(fn, "arguments", None),
                    )
                )
            for event in events:
                bound.take(_piece(event))
                yield event
            if choice.finish_reason:
                finish = choice.finish_reason
        if bound.exceeded():
            for event in think.end():
                yield event
            yield Finish("max-tokens")
            return
    for event in think.end():
        yield event
    if usage is not None:
        yield UsageReport(usage_from_wire(usage))
    if finish is None and _media(content_type) == EVENT_STREAM:
        raise _NoFinish  # said with what the caller received (``closed_mid_reply``)
    if finish is None:
        raise unfinished_stream("finish reason", content_type, base_url)
    reason = _FINISH_REASONS.get(finish, "stop")
    if reason == "stop" and calls:
        # Ollama and some llama.cpp builds report "stop" for a reply that calls tools.
        reason = "tool-calls"
    yield Finish(reason)


def closed_mid_reply(received: int, *, no_finish: bool = False) -> ProviderError:
    """The ``CONNECTION`` error of a reply whose connection closed before its end, after
    ``received`` characters (text, reasoning, call arguments). ``no_finish``: the stream closed
    cleanly but without a finish reason (a proxy whose server died closes it so). Retried like
    any ``CONNECTION`` while nothing has reached the caller."""
    where = (
        f"mid-reply ({received:,} characters received)"
        if received
        else "before the reply's first character"
    )
    without = ", without a finish reason" if no_finish else ""
    return provider_error(
        ErrorCode.CONNECTION, f"the server closed the connection {where}{without}"
    )


class _NoFinish(Exception):
    """An event stream that ended without a finish reason: its connection closed mid-reply."""


def _received(event: StreamEvent) -> int:
    """The characters ``event`` carries (the figure a reply cut short is said with)."""
    if isinstance(event, TextDelta | ReasoningDelta | ToolCallDelta):
        return len(_piece(event))
    return 0


def _piece(event: TextDelta | ReasoningDelta | TextWasReasoning | ToolCallDelta) -> str:
    """The output ``event`` streamed, for ``OutputBound`` to count."""
    if isinstance(event, ToolCallDelta):
        return event.arguments
    return "" if isinstance(event, TextWasReasoning) else event.text


def _another_choice(choice: Any) -> bool:
    """A choice other than the first (``index`` 1 and on, of a server answering ``n`` > 1 or
    a proxy that fans out): only choice 0 is the reply; one without an index counts as it."""
    index = getattr(choice, "index", None)
    return isinstance(index, int) and not isinstance(index, bool) and index != 0


def _reasoning(delta: Any) -> str | None:
    """A delta's reasoning: ``reasoning_content`` (DeepSeek, llama.cpp, older vLLM), else
    ``reasoning`` (newer vLLM, Ollama, OpenRouter; a server sending both sends it twice)."""
    for field in ("reasoning_content", "reasoning"):
        value = getattr(delta, field, None)
        if isinstance(value, str) and value:
            return value
    return None


def usage_from_wire(usage: Any) -> UsageStruct:
    """Chat-completions usage as dsh ``Usage``: input excludes cache reads. Figures are
    sanitised (``wire_count``: none is negative), cache reads are at most the prompt and
    reasoning at most the output."""
    prompt = wire_count(getattr(usage, "prompt_tokens", None)) or 0
    output = wire_count(getattr(usage, "completion_tokens", None)) or 0
    cached = wire_count(getattr(usage, "prompt_cache_hit_tokens", None))  # DeepSeek
    details = getattr(usage, "prompt_tokens_details", None)
    if cached is None and details is not None:
        cached = wire_count(getattr(details, "cached_tokens", None))
    completion_details = getattr(usage, "completion_tokens_details", None)
    reasoning = wire_count(getattr(completion_details, "reasoning_tokens", None))
    cache_read = None if cached is None else min(cached, prompt)
    return UsageStruct(
        input_tokens=prompt - (cache_read or 0),
        output_tokens=output,
        cache_read_tokens=cache_read,
        reasoning_tokens=None if reasoning is None else min(reasoning, output),
    )
