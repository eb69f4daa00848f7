"""Model requests are a pure function of the log: the latest header plus the derived messages.

The loop builds every request with ``request_from_state``; ``rebuild_requests`` replays a log and
rebuilds the request behind every logged model call the same way, which is how tests prove that
what the model saw is exactly what was logged (docs/architecture.md, "Requests are a function
of the log").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from dsh.events import (
    AssistantMessageEvent,
    Event,
    RequestErrorEvent,
    RequestHeaderBody,
    RequestHeaderEvent,
)
from dsh.llm.types import ModelRequest
from dsh.surface import SurfaceProjection


def request_from_state(header: RequestHeaderBody, projection: SurfaceProjection) -> ModelRequest:
    """The request a header and a surface make: system + tools + messages, in that order."""
    config = header.config
    return ModelRequest(
        provider=config.provider,
        model=config.model,
        system=header.system,
        tools=tuple(header.tools or ()),
        messages=tuple(projection.messages()),
        params=dict(config.params or {}),
    )


def rebuild_requests(events: Sequence[Event]) -> Iterator[tuple[int, ModelRequest]]:
    """For each conversation model call in the log (an ``assistant/message`` or a
    ``request/error``), the seq of its outcome and the request rebuilt from the log prefix."""
    projection = SurfaceProjection()
    header: RequestHeaderBody | None = None
    for event in events:
        is_call = isinstance(event, RequestErrorEvent) or (
            isinstance(event, AssistantMessageEvent)
            and event.surface_op == "append"
            and event.data.error_code is None  # a failed stream's prefix: its error is the call
        )
        if is_call and header is not None:
            yield event.seq, request_from_state(header, projection)
        if isinstance(event, RequestHeaderEvent):
            header = event.data.header
        projection.apply(event)
