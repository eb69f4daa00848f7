"""The recallable backend: frozen index stubs, one state checkpoint, recall by checkpoint id."""

from dsh.compaction.recallable.backend import RecallableBackend, checkpoint_kind
from dsh.compaction.recallable.chunking import SpanNode, chunk_span, trailing_start

__all__ = ["RecallableBackend", "SpanNode", "checkpoint_kind", "chunk_span", "trailing_start"]
