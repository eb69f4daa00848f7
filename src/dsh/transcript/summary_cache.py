"""The session summary cache: one small JSON file per store under the dsh home.

``<home>/cache/session-summaries-<backend>.json`` (``dsh.store.derived.summary_cache_path``)
holds, per session id, the figures a summary needs (``SummaryFold``) and the position in the log
they cover (``dsh.store.appended.LogPosition``). It is derived data: a file that is missing,
unreadable, corrupt, of another format or version, is an empty cache (rebuilt by the next
listing, never an error), and a cache that cannot be written (a read-only home, a full disk) is
simply not kept. A write goes to a temporary file in the same directory renamed over the old one,
so a reader sees the old cache or the new, never half of one; two listings at once each write a
whole cache and the last rename wins (either is correct: every entry is checked against its log
before it is used). No fsync: after a power loss the cache may be old or empty, never wrong.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

import msgspec

from dsh.config.private_dirs import make_private_directory
from dsh.store.appended import LogPosition
from dsh.transcript.titles import SummaryFold

CACHE_FORMAT = "dsh-session-summaries"
CACHE_VERSION = 3
"""3: a first prompt's title leaves out the ``!cmd`` output sent ahead of it (version 2 titled
such a session "I ran `…`"); 2: titles are kept to ``WIDEST_TITLE_CHARS`` (version 1 kept the
terminal's narrower cut, too short for the web's sidebar). An older cache is rebuilt."""


class CachedSummary(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One session's figures and how far into its log they go."""

    position: LogPosition
    fold: SummaryFold


class _CacheFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    format: str
    version: int
    sessions: dict[str, CachedSummary]


_decoder = msgspec.json.Decoder(_CacheFile)
_encoder = msgspec.json.Encoder()


def load_cache(path: Path) -> dict[str, CachedSummary]:
    """The cached summaries at ``path`` by session id; empty if there is no usable cache."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    try:
        cache = _decoder.decode(data)
    except msgspec.DecodeError:  # corrupt, truncated, or some other file
        return {}
    if cache.format != CACHE_FORMAT or cache.version != CACHE_VERSION:
        return {}
    return cache.sessions


def save_cache(path: Path, sessions: dict[str, CachedSummary]) -> bool:
    """Replace the cache at ``path`` with ``sessions`` (atomically); False if it cannot be
    written, which is not an error (the next listing reads the logs again)."""
    body = _encoder.encode(
        _CacheFile(format=CACHE_FORMAT, version=CACHE_VERSION, sessions=sessions)
    )
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        make_private_directory(path.parent)
        temporary.write_bytes(body)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        return False
    return True
