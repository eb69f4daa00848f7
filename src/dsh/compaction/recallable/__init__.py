"""The recallable backend: frozen index stubs, one state checkpoint, recall by checkpoint id."""

from dsh.compaction.recallable.backend import RecallableBackend
from dsh.compaction.recallable.chunking import SpanNode, chunk_span, trailing_start

__all__ = ["RecallableBackend", "SpanNode", "chunk_span", "trailing_start"]
