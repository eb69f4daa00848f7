"""dsh: an agent harness whose context management never loses history.

The public facade is small on purpose; subsystems are imported from their packages. The names
below load on first use, so ``import dsh`` (and ``dsh --version``) imports no subsystem.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # no ``typing`` at run time: the keeper program imports this package too
if TYPE_CHECKING:
    from typing import Any

    from dsh.errors import DshError
    from dsh.store import EventStore, JsonlStore, MemoryStore, SqliteStore, open_store
    from dsh.surface import Session, fold_surface

__version__ = "0.1.0"

_LAZY = {
    "DshError": "dsh.errors",
    "EventStore": "dsh.store",
    "JsonlStore": "dsh.store",
    "MemoryStore": "dsh.store",
    "SqliteStore": "dsh.store",
    "open_store": "dsh.store",
    "Session": "dsh.surface",
    "fold_surface": "dsh.surface",
}

__all__ = [
    "DshError",
    "EventStore",
    "JsonlStore",
    "MemoryStore",
    "Session",
    "SqliteStore",
    "__version__",
    "fold_surface",
    "open_store",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dsh' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
