"""Anthropic Messages API adapter.

The messages and tools go on the wire as ``dsh.llm.anthropic_wire`` lays them out (strictly
alternating roles, tool results inside user messages, prompt-cache breakpoints); here the system
block gets its own breakpoint and the SDK streams the call. The route goes
where dsh's settings say (``ANTHROPIC_BASE_URL`` is not read), and a server that is not
Anthropic's gets none of the headers the SDK adds from the environment, nor the SDK's platform
headers (``dsh.llm.sdk_environment``); every server gets the route's ``provider.headers``.
The SDK is imported, and the client made, on first use (``dsh.llm.sdk_client``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from dsh.errors import ConfigError, ProviderError
from dsh.events import Event
from dsh.events import Usage as UsageStruct
from dsh.llm.anthropic_models import fit_body, retired_model_hint
from dsh.llm.anthropic_wire import CACHE_BREAKPOINT, to_wire_messages, tool_to_wire
from dsh.llm.errors import (
    base_url_refusal,
    client_credentials,
    content_type,
    map_anthropic_error,
    unfinished_stream,
    without_credentials,
)
from dsh.llm.registry import on_host
from dsh.llm.sdk_client import ClientOnFirstUse, LazyClient
from dsh.llm.sdk_environment import (
    ANTHROPIC_CUSTOM_HEADERS,
    cancelling_headers,
    platform_headers_dropped,
    request_platform_headers_dropped,
)
from dsh.llm.stream_repair import OutputBound, arguments_text, wire_count
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

if TYPE_CHECKING:  # the SDK is imported when the client is made (``dsh.llm.sdk_client``)
    import anthropic

    Sdk = tuple[anthropic.AsyncAnthropic, dict[str, anthropic.Omit]]
    """The client, and each request's ``extra_headers``: what the SDK would add to a request
    and this server must not get."""

DEFAULT_MAX_TOKENS = 8192
"""Sent when neither the request nor the provider's defaults set ``max_tokens`` (required)."""

ANTHROPIC_HOST = "api.anthropic.com"
ANTHROPIC_API_URL = f"https://{ANTHROPIC_HOST}"
"""The route's server when no base URL is configured; the SDK would take ``ANTHROPIC_BASE_URL``
instead, sending the key where dsh's settings do not say."""

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "refusal": "filtered",
    "tool_use": "tool-calls",
    "max_tokens": "max-tokens",
    "model_context_window_exceeded": "max-tokens",
}


class AnthropicProvider(ClientOnFirstUse["Sdk"]):
    """The Anthropic Messages API; ``model`` is used when a request does not name one;
    ``headers`` (``provider.headers``) go with every request."""

    def __init__(
        self,
        name: str = "anthropic",
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: anthropic.AsyncAnthropic | None = None,
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
            url = base_url or ANTHROPIC_API_URL
            self._refusal = base_url_refusal(url)
            if self._refusal is None:
                key, extra = api_key, dict(headers or {})
                self._sdk = LazyClient(lambda: _sdk_client(url, key, extra))
        self.name = name
        self.model = model
        self._base_url = None if client is not None else base_url or ANTHROPIC_API_URL
        """Named when an answer is not an event stream (None: a client was given)."""
        self._default_params = dict(default_params or {})
        self._header_names = tuple(headers or {})
        """The ``provider.headers`` names: their values (the client's) are masked out of every
        error's text, as its key is (a server may echo what it got)."""

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
        # Everything but max_tokens goes in the body verbatim: the SDK has no keyword argument
        # for some API parameters (temperature, top_k…) and rejects unknown ones.
        # What the model refuses (sampling parameters on Sonnet 5 and later…) is left out, and
        # Sonnet 5.5 is asked for its thinking summarized (``dsh.llm.anthropic_models``).
        body = fit_body(model, {**self._default_params, **request.params})
        max_tokens = int(body.pop("max_tokens", DEFAULT_MAX_TOKENS))
        if request.system:
            body["system"] = [
                {"type": "text", "text": request.system, "cache_control": CACHE_BREAKPOINT}
            ]
        if request.tools:
            body["tools"] = [tool_to_wire(t) for t in request.tools]
        try:
            events = await client.messages.create(
                model=model,
                max_tokens=max_tokens,
                messages=to_wire_messages(request.messages, model=model),
                stream=True,
                extra_body=body,
                extra_headers=request_headers,
            )
            # Closing the stream releases the connection when the caller stops early.
            async with events:
                async for event in _events(
                    events, content_type(events), self._base_url, max_tokens
                ):
                    yield event
        except ProviderError as exc:
            raise without_credentials(exc, client_credentials(client, self._header_names)) from None
        except Exception as exc:
            raise without_credentials(
                _retired(map_anthropic_error(exc), model),
                client_credentials(client, self._header_names),
            ) from exc


def _retired(error: ProviderError, model: str) -> ProviderError:
    """A 404 naming ``model`` (Anthropic's answer for a model it does not serve, a retired one
    among them) said in one line with how to switch (``retired_model_hint``)."""
    hint = retired_model_hint(model, error.detail) if error.status == 404 else None
    if hint is None:
        return error
    return ProviderError(error.code, hint, retryable=False, status=error.status)


def _sdk_client(base_url: str, api_key: str | None, headers: Mapping[str, str]) -> Sdk:
    """Import the SDK and make the client for ``base_url`` (``_client``) and the headers each
    of its requests drops; a URL the SDK's own parser refuses all the same raises its mapped
    ``ProviderError``."""
    import anthropic

    try:
        client = _client(base_url, api_key, headers)
    except Exception as exc:
        raise map_anthropic_error(exc) from None
    if on_host(base_url, ANTHROPIC_HOST):
        return client, {}
    return client, request_platform_headers_dropped(anthropic.Omit())


def _client(
    base_url: str, api_key: str | None, headers: Mapping[str, str]
) -> anthropic.AsyncAnthropic:
    """The SDK client for ``base_url``, sending ``headers`` on every request. The SDK adds a
    header for each line of ``ANTHROPIC_CUSTOM_HEADERS`` (an ``Authorization`` among them
    replacing the key) and its platform headers (``X-Stainless-*``): kept for Anthropic's own
    server (https on ``api.anthropic.com``), but any other gets none of them and the key as the
    SDK itself sends it (a first client's ``auth_headers``), from a second client built with
    them cancelled."""
    import anthropic

    # Retries belong to dsh.llm.retry, which logs them; the SDK must not retry silently.
    if on_host(base_url, ANTHROPIC_HOST):
        return anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, default_headers=dict(headers)
        )
    client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0)
    default = {
        **platform_headers_dropped(client.default_headers, anthropic.Omit()),
        **cancelling_headers(ANTHROPIC_CUSTOM_HEADERS, client.auth_headers, anthropic.Omit()),
        **headers,
    }
    # An Omit value drops the header (the SDK's own type for the argument says str).
    return anthropic.AsyncAnthropic(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        default_headers=cast("dict[str, str]", default),
    )


async def _events(
    stream: AsyncIterator[Any],
    content_type: str | None = None,
    base_url: str | None = None,
    max_tokens: Any = None,
) -> AsyncIterator[StreamEvent]:
    """Translate raw Messages stream events; usage and finish come last, in that order. An
    answer without a stop reason is ``unfinished_stream``'s error, said by its
    ``content_type``. A block's text or tool input given whole in its ``content_block_start``
    (proxies that stream a non-streamed answer) is used; a reply streamed far past
    ``max_tokens`` is ended as cut at the limit (``dsh.llm.stream_repair.OutputBound``)."""
    usage: dict[str, int | None] = {}
    stop_reason: str | None = None
    tool_index: dict[int, int] = {}  # content block index -> tool call ordinal
    given_input: set[int] = set()  # tool blocks whose input has streamed a piece
    start_input: dict[int, str] = {}  # tool blocks whose start gave their whole input
    bound = OutputBound(max_tokens)
    async for event in stream:
        kind = event.type
        if kind == "message_start":
            _take_usage(usage, event.message.usage)
        elif kind == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                ordinal = tool_index.setdefault(event.index, len(tool_index))
                given = getattr(block, "input", None)
                if given:  # the standard start gives ``{}`` and streams the input
                    start_input[event.index] = arguments_text(given)
                yield ToolCallDelta(index=ordinal, id=block.id, name=block.name)
            elif block.type == "text" and getattr(block, "text", None):
                bound.take(block.text)
                yield TextDelta(block.text)
            elif block.type == "thinking":
                bound.take(block.thinking or "")
                yield ReasoningDelta(
                    block.thinking or "", signature=block.signature or None, new_block=True
                )
            elif block.type == "redacted_thinking":
                yield ReasoningDelta("", redacted=block.data, new_block=True)
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                bound.take(delta.text)
                yield TextDelta(delta.text)
            elif delta.type == "thinking_delta":
                bound.take(delta.thinking)
                yield ReasoningDelta(delta.thinking)
            elif delta.type == "signature_delta":
                yield ReasoningDelta("", signature=delta.signature)
            elif delta.type == "input_json_delta" and event.index in tool_index:
                if delta.partial_json:
                    given_input.add(event.index)
                bound.take(delta.partial_json)
                yield ToolCallDelta(index=tool_index[event.index], arguments=delta.partial_json)
        elif kind == "content_block_stop" and event.index in tool_index:
            if event.index not in given_input:
                # A call that takes no arguments streams no input: its block's end is what
                # says it is complete (a partial reply keeps it), and its input is ``{}``
                # unless its start gave it whole.
                whole = start_input.get(event.index, "{}")
                yield ToolCallDelta(index=tool_index[event.index], arguments=whole)
        elif kind == "message_delta":
            _take_usage(usage, event.usage)
            stop_reason = event.delta.stop_reason or stop_reason
        if bound.exceeded():
            yield Finish("max-tokens")
            return
    if usage:
        yield UsageReport(
            UsageStruct(
                input_tokens=usage.get("input_tokens") or 0,
                output_tokens=usage.get("output_tokens") or 0,
                cache_read_tokens=usage.get("cache_read_input_tokens"),
                cache_write_tokens=usage.get("cache_creation_input_tokens"),
                reasoning_tokens=usage.get("reasoning_tokens"),
            )
        )
    if stop_reason is None:
        raise unfinished_stream("stop reason", content_type, base_url)
    yield Finish(_STOP_REASONS.get(stop_reason, "stop"))


def _take_usage(into: dict[str, int | None], usage: Any) -> None:
    """Fold a usage object in; message_delta figures are cumulative, so later ones win. A
    figure that is negative counts as 0, one that is not a number as not sent
    (``wire_count``)."""
    if usage is None:
        return
    for key in (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ):
        value = wire_count(getattr(usage, key, None))
        if value is not None:
            into[key] = value
    details = getattr(usage, "output_tokens_details", None)
    thinking = wire_count(getattr(details, "thinking_tokens", None))
    if thinking is not None:
        into["reasoning_tokens"] = thinking
