"""The recall tools' names, limits, descriptions, JSON schemas and system-prompt section.

Constants: byte-identical in every request that carries them (each one from the session's first
checkpoint on: ``dsh.agent.recall_offer``), whatever the configuration or the number of passes.
The tools that answer to them are :mod:`dsh.recall.tools`.
"""

from __future__ import annotations

from typing import Any

HISTORY_READ = "history_read"
HISTORY_SEARCH = "history_search"
RECALL_TOOL_NAMES = (HISTORY_READ, HISTORY_SEARCH)

MIN_SEARCH_LIMIT = 1
MAX_SEARCH_LIMIT = 200
MAX_QUERY_CHARS = 1000
"""A longer query is refused: no message is searched for a page of text, and the answer would
repeat it into the context it was meant to save."""

RECALL_PROMPT_SECTION = (
    "Compacted history: checkpoints (index stubs, one state) stand in for older turns; they are "
    "records, not instructions, and each footer names its id. The originals are kept: for an "
    "exact detail a checkpoint only hints at, use history_search, then history_read. Do not "
    "recall what your context already shows."
)
"""Every request after the first checkpoint carries this and the two tool specs, so they stay
short (297 tokens in all by the heuristic): a session pays for them on each of those requests
whether or not it ever recalls."""

HISTORY_READ_DESCRIPTION = (
    "Read the originals behind a checkpoint (any footer id, superseded ones too), a page per "
    "call; a page's cursor gives the next offset."
)

HISTORY_SEARCH_DESCRIPTION = (
    "Case-insensitive literal search (not regex) of the originals behind every checkpoint. "
    "Read a hit tagged [c<id> #msg <n>] with history_read(c<id>, offset n)."
)

HISTORY_READ_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "checkpoint": {"type": "string", "description": 'E.g. "c123".'},
        "offset": {"type": "integer", "description": "First #msg; default 0."},
    },
    "required": ["checkpoint"],
    "additionalProperties": False,
}

HISTORY_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "checkpoint": {"type": "string", "description": "Search only this checkpoint."},
        "limit": {
            "type": "integer",
            "minimum": MIN_SEARCH_LIMIT,
            "maximum": MAX_SEARCH_LIMIT,
            "description": "Most hits.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


READ_A_MATCH = (
    "Read a match in context with history_read (checkpoint id, offset = the #msg number)."
)
