"""What the status bar follows in the log: face-neutral, in ``dsh.transcript.progress``."""

from dsh.transcript.progress import CacheCounter, CompactionProgress

__all__ = ["CacheCounter", "CompactionProgress"]
