"""The names MCP tools are offered to the model under: ``mcp__<server>__<tool>``.

Providers accept tool names of ``[a-zA-Z0-9_-]`` and at most 64 characters. A server's tool may be
called anything, so every other character becomes ``_``; a name still too long, or taken by an
earlier tool (``a.b`` and ``a_b`` sanitise alike), is cut and ends in ``_`` and eight hex digits
of a hash of the server and tool names as they were. The result depends only on the list it is
given, in order, so the same servers give the same names (and the same request prefix) every
time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_NAME_CHARS = 64
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""What every provider accepts as a tool name."""
_OTHER = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_CHARS = 8


def sanitise(text: str) -> str:
    """``text`` with every character outside ``[a-zA-Z0-9_-]`` replaced by ``_`` (``_`` alone
    for an empty text)."""
    return _OTHER.sub("_", text) or "_"


def exposed_names(tools: Sequence[tuple[str, str]]) -> list[str]:
    """The name of each ``(server, tool)`` pair, in order: unique, at most 64 characters of
    ``[a-zA-Z0-9_-]``, and ``mcp__<server>__<tool>`` whenever that fits and is free."""
    taken: set[str] = set()
    names: list[str] = []
    for server, tool in tools:
        plain = PREFIX + sanitise(server) + SEPARATOR + sanitise(tool)
        name, attempt = plain, 0
        while len(name) > MAX_NAME_CHARS or name in taken:
            name = _hashed(plain, server, tool, attempt)
            attempt += 1
        taken.add(name)
        names.append(name)
    return names


def _hashed(name: str, server: str, tool: str, attempt: int) -> str:
    """``name`` cut to leave room for ``_`` and a hash of the original pair (and of
    ``attempt``, should two hashes ever meet)."""
    seed = f"{server}\0{tool}\0{attempt}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(seed).hexdigest()[:_HASH_CHARS]
    keep = MAX_NAME_CHARS - _HASH_CHARS - 1
    return f"{name[:keep]}_{digest}"
