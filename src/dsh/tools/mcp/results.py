"""An MCP tool call's answer as a dsh ``ToolOutput``.

The text blocks are joined by blank lines; every other block (an image, audio, a binary
resource, a resource link) is one short placeholder line saying what was left out, since the log
and the model's context hold text. A result with no text block but a structured value shows that
value as JSON. ``isError`` makes an error output (code ``MCP_TOOL_ERROR``); a result longer than
the shell tool's cap keeps its start and its end. Failures to get an answer at all (the server
gone, a timeout, a protocol error) are described by :func:`failure_output`.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING

from dsh.tools.base import ToolOutput
from dsh.tools.secrets import SecretPolicy
from dsh.tools.shell import OUTPUT_CAP, CappedOutput

if TYPE_CHECKING:
    from mcp_types import CallToolResult, ContentBlock

TOOL_ERROR = "MCP_TOOL_ERROR"
"""The server's tool answered with ``isError``."""
SERVER_ERROR = "MCP_ERROR"
"""No answer: the server is gone, or it answered with a protocol error."""
TIMEOUT = "TIMEOUT"


def tool_output(result: CallToolResult, secrets: SecretPolicy | None = None) -> ToolOutput:
    """The ``ToolOutput`` of a ``tools/call`` result."""
    parts = [_block_text(block) for block in result.content]
    if not any(block.type == "text" for block in result.content):
        structured = result.structured_content
        if structured is not None:
            parts.insert(0, json.dumps(structured, ensure_ascii=False, indent=2, default=str))
    text = "\n\n".join(part for part in parts if part) or "(no output)"
    if len(text) > OUTPUT_CAP:
        capped = CappedOutput(secrets=secrets, terminal=False)  # a server's text, not a tty's
        capped.feed(text.encode("utf-8", "surrogatepass"), final=True)
        text = capped.text()
    if result.is_error:
        return ToolOutput(text, is_error=True, code=TOOL_ERROR)
    return ToolOutput(text)


def _block_text(block: ContentBlock) -> str:
    """A text block's text; a one-line placeholder for anything else."""
    if block.type == "text":
        return block.text
    if block.type in ("image", "audio"):
        return f"[{block.type} omitted: {block.mime_type}, {_decoded_size(block.data)}]"
    if block.type == "resource_link":
        return f"[resource link: {block.uri}{_mime(block.mime_type)}]"
    if block.type != "resource":
        return f"[{block.type} omitted]"
    contents = block.resource
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return f"[resource {contents.uri}{_mime(contents.mime_type)}]\n{text}"
    blob = getattr(contents, "blob", "")
    size = _decoded_size(blob)
    return f"[resource omitted: {contents.uri}{_mime(contents.mime_type)}, {size}]"


def _mime(mime_type: str | None) -> str:
    return f" ({mime_type})" if mime_type else ""


def _decoded_size(data: str) -> str:
    try:
        return f"{len(base64.b64decode(data, validate=False))} bytes"
    except (binascii.Error, ValueError):
        return f"{len(data)} characters of base64"


def failure_output(text: str, code: str = SERVER_ERROR) -> ToolOutput:
    """An error output for a call that got no answer."""
    return ToolOutput(text, is_error=True, code=code)
