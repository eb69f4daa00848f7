"""One MCP server's tool as a dsh ``Tool`` (kind ``mcp``): its call goes to the hub.

What the model is shown comes from the server, made safe to send: the description cut at
:data:`MAX_DESCRIPTION_CHARS` (a server can describe a tool at any length, and every request
carries it), the input schema always an object schema (the MCP rule; a server that breaks it gets
an empty one, whose calls the server then judges).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from dsh.tools.base import ToolContext, ToolKind, ToolOutput

MAX_DESCRIPTION_CHARS = 2048
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

Caller = Callable[[str, str, dict[str, Any], float], Awaitable[ToolOutput]]
"""``call(server, tool, arguments, timeout_s)``: the hub's way to run a call."""


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as a server listed it (no SDK type: the hub's thread made it)."""

    name: str
    description: str
    input_schema: dict[str, Any]


class McpTool:
    """A server's tool under its exposed name (``mcp__<server>__<tool>``)."""

    kind: ToolKind = "mcp"

    def __init__(
        self,
        *,
        name: str,
        server: str,
        remote: RemoteTool,
        timeout_s: float,
        call: Caller,
    ) -> None:
        self.name = name
        self.server = server
        self.remote_name = remote.name
        self.description = tool_description(server, remote)
        self.parameters = object_schema(remote.input_schema)
        self.timeout_s = timeout_s
        self._call = call

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Call the tool on its server; every failure is an error output, cancellation
        propagates (and cancels the call on the hub)."""
        return await self._call(self.server, self.remote_name, args, self.timeout_s)


def tool_description(server: str, remote: RemoteTool) -> str:
    """The server's description of the tool, cut to :data:`MAX_DESCRIPTION_CHARS`; a tool
    without one is described by where it comes from."""
    text = remote.description.strip() or f"The {remote.name!r} tool of MCP server {server!r}."
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return text


def object_schema(schema: object) -> dict[str, Any]:
    """``schema`` as the object schema a tool's parameters must be: a copy, ``"type":
    "object"`` added where the type is missing; anything else (not an object schema, not JSON)
    becomes an empty object schema."""
    if not isinstance(schema, dict):
        return copy.deepcopy(EMPTY_SCHEMA)
    try:
        copied: dict[str, Any] = json.loads(json.dumps(schema))  # the log holds it as JSON
    except (TypeError, ValueError):
        return copy.deepcopy(EMPTY_SCHEMA)
    if copied.get("type", "object") != "object":
        return copy.deepcopy(EMPTY_SCHEMA)
    return {"type": "object", **{k: v for k, v in copied.items() if k != "type"}}
