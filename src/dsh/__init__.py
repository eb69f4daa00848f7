"""dsh: an agent harness whose context management never loses history.

The public facade is small on purpose; subsystems are imported from their packages.
"""

from dsh.errors import DshError
from dsh.store import EventStore, JsonlStore, MemoryStore, SqliteStore, open_store
from dsh.surface import Session, fold_surface

__version__ = "0.1.0"

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
