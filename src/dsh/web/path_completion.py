"""``GET /api/sessions/{id}/paths?prefix=…``: what the composer's ``@partial`` may name in the
session's recorded workspace, as the terminal UI completes it (``dsh.agent.path_completion``:
relative to the workspace, directories with a trailing ``/``, hidden entries only for a dot,
nothing outside the workspace).

The answer is ``{prefix, candidates, common, total, truncated, quoted}``: at most
``MAX_PATH_CANDIDATES`` candidates, sorted; ``common`` is the text all of them begin with (the
ones left out by the cap too, so the page never completes past a candidate it was not sent);
``quoted`` counts those (left out too) whose mention must be quoted (``@"my notes.md"``,
``dsh.agent.path_completion.needs_quotes``), so the page knows whether the mentions it inserts
begin with ``@"`` whichever were left out.
A file name that is not UTF-8 cannot be sent as JSON, nor typed back: it is left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio.to_thread

from dsh.agent.path_completion import common_prefix, needs_quotes, path_candidates
from dsh.web.errors import bad_request

MAX_PATH_CANDIDATES = 200
MAX_PREFIX_CHARS = 4096
"""Linux's ``PATH_MAX``: no longer partial names a file."""


def checked_prefix(raw: str | None) -> str:
    """The ``prefix`` query parameter (missing: empty, the workspace's top); 400 for one over
    ``MAX_PREFIX_CHARS`` or holding a NUL, which no path holds."""
    prefix = raw or ""
    if len(prefix) > MAX_PREFIX_CHARS:
        raise bad_request(f"prefix must be at most {MAX_PREFIX_CHARS} characters")
    if "\x00" in prefix:
        raise bad_request("prefix must not contain a NUL character")
    return prefix


async def completed_paths(workspace: Path, prefix: str) -> dict[str, Any]:
    """The paths API's answer for ``prefix`` in ``workspace`` (the listing off the event loop)."""
    found = await anyio.to_thread.run_sync(path_candidates, prefix, workspace)
    sendable = [name for name in found if _is_utf8(name)]
    return {
        "prefix": prefix,
        "candidates": sendable[:MAX_PATH_CANDIDATES],
        "common": common_prefix(sendable),
        "total": len(sendable),
        "truncated": len(sendable) > MAX_PATH_CANDIDATES,
        "quoted": sum(1 for name in sendable if needs_quotes(name)),
    }


def _is_utf8(name: str) -> bool:
    """False for a name holding the lone surrogates ``os.fsdecode`` makes of bytes that are not
    UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
