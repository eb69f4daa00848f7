"""Append-only session logs: the store protocol and its JSONL, SQLite and memory backends."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from dsh.errors import ConfigError
from dsh.store.base import (
    DURABLE_EVENT_CLASSES,
    EventStore,
    SessionHeader,
    SessionLog,
    UnreadableSession,
    new_session_id,
    now_millis,
)
from dsh.store.derived import anchor_cache_dir, anchor_cache_path, span_cache_dir, span_cache_path
from dsh.store.jsonl import JsonlStore
from dsh.store.memory import MemoryStore
from dsh.store.other_store import resolve_session_id
from dsh.store.repair import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, plan_crash_repair
from dsh.store.sqlite import SqliteStore

StoreBackend = Literal["jsonl", "sqlite"]


def open_store(home: Path, backend: str = "jsonl") -> EventStore:
    """The store for ``backend`` under the dsh home directory."""
    if backend == "jsonl":
        return JsonlStore(home)
    if backend == "sqlite":
        return SqliteStore(home)
    raise ConfigError(f"store.backend must be 'jsonl' or 'sqlite', not {backend!r}")


__all__ = [
    "DURABLE_EVENT_CLASSES",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "EventStore",
    "JsonlStore",
    "MemoryStore",
    "SessionHeader",
    "SessionLog",
    "SqliteStore",
    "StoreBackend",
    "UnreadableSession",
    "anchor_cache_dir",
    "anchor_cache_path",
    "new_session_id",
    "now_millis",
    "open_store",
    "plan_crash_repair",
    "resolve_session_id",
    "span_cache_dir",
    "span_cache_path",
]
