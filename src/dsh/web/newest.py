"""The newest history page of a stored JSONL session (``dsh.transcript.newest``, shared with the
TUI's first paint)."""

from dsh.transcript.newest import FIRST_READ_BYTES, newest_page

__all__ = ["FIRST_READ_BYTES", "newest_page"]
