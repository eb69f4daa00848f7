"""The tool seam: a tool has a schema and one async ``run``.

Tools never raise for expected failures: bad arguments, a missing file, a path outside the
workspace all come back as an error ``ToolOutput`` the model can act on. ``ToolError`` is the
convenient way to say so from inside a tool; the registry turns it into that output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from dsh.events import Event, EventsByType
from dsh.tools.output_tail import OutputTail

ToolKind = Literal["read", "write", "shell", "network", "meta", "mcp"]
"""What a tool may do; approval policies decide by kind (``read-only`` allows read and meta).
``network``: a request to a URL the model chose (``web_fetch``). ``mcp``: a tool of a
configured MCP server (``dsh.tools.mcp``), which may do anything."""

Caller = Literal["agent", "cli", "human"]


class OutputSoFar:
    """Where a tool stopped mid-run (``bash``) leaves what it had printed when its call is
    cancelled, bounded as it bounds a finished call's output: the loop answers the cancelled
    call with it (``dsh.agent.tool_calls``). None: the tool left nothing."""

    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text: str | None = None


@dataclass(frozen=True, slots=True)
class ToolContext:
    workspace: Path
    """Resolved workspace root; file tools refuse paths that resolve outside it."""
    session_id: str
    call_id: str
    history: Sequence[Event] = ()
    """The session log at call time (recall tools read it)."""
    history_index: EventsByType | None = None
    """``history``'s per-type index (the session's ``of_type``), when the caller keeps one:
    the recall tools find the checkpoints in it instead of walking the log."""
    caller: Caller = "agent"
    output_so_far: OutputSoFar | None = None
    """Where the tool leaves what it printed if its call is cancelled (None: nobody reads it)."""
    output_tail: OutputTail | None = None
    """Where the tool shows what it prints while it runs (``bash``; None: nobody shows it)."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    text: str
    is_error: bool = False
    code: str | None = None
    """Error code for ``tool/result.error.code`` (e.g. ``INVALID_ARGUMENT``)."""
    meta: dict[str, Any] | None = field(default=None)
    log: tuple[Any, ...] = ()
    """Extra event payloads the loop appends after the result (``TodoWrite`` for todo_write)."""


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema (an object schema) of the arguments."""
    kind: ToolKind

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...


def tool_spec(tool: Tool) -> dict[str, Any]:
    """The provider-neutral spec logged in ``request/header.tools``."""
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
