"""Progress per run: a ``rich`` bar per run on a terminal, plain text lines otherwise.

Workers put ``(key, turns done, turns total, passes)`` on a queue (``-1`` values mean the run
ended); the parent drains it. Plain mode prints a line when a run starts, every quarter, and at
the end, so CI logs stay short.
"""

from __future__ import annotations

import queue as queue_module
import time
from collections.abc import Sequence
from typing import Any, TextIO


class ProgressBoard:
    def __init__(self, keys: Sequence[str], *, stream: TextIO) -> None:
        self.stream = stream
        self.keys = list(keys)
        self._quarter: dict[str, int] = {}
        self._started: dict[str, float] = {}
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}
        if getattr(stream, "isatty", lambda: False)():
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

                self._rich = Progress(
                    TextColumn("{task.description:<28}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("turns  {task.fields[passes]} passes"),
                    console=Console(file=stream),
                )
                for key in self.keys:
                    self._tasks[key] = self._rich.add_task(key, total=None, passes=0)
                self._rich.start()
            except ImportError:  # pragma: no cover - rich ships with textual
                self._rich = None

    def sink(self) -> _Sink:
        """A queue-like object for in-process runs: each ``put`` updates the board at once."""
        return _Sink(self)

    def drain(self, source: Any, *, timeout: float = 0.0) -> None:
        """Apply every queued update; wait up to ``timeout`` for the first one."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                item = source.get(timeout=remaining) if remaining > 0 else source.get_nowait()
            except (queue_module.Empty, EOFError, OSError):
                return
            self.update(*item)

    def update(self, key: str, done: int, total: int, passes: int) -> None:
        now = time.monotonic()
        started = self._started.setdefault(key, now)
        if self._rich is not None:
            task = self._tasks.get(key)
            if task is not None:
                if done < 0:
                    self._rich.update(task, description=f"{key} ✓")
                else:
                    self._rich.update(task, completed=done, total=total, passes=passes)
            return
        if done < 0:
            self.stream.write(f"[bench] {key}: finished in {now - started:.1f} s\n")
            self.stream.flush()
            return
        quarter = done * 4 // max(total, 1)
        if self._quarter.get(key) != quarter or done == 1:
            self._quarter[key] = quarter
            self.stream.write(f"[bench] {key}: turn {done}/{total}, {passes} passes\n")
            self.stream.flush()

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()


class _Sink:
    def __init__(self, board: ProgressBoard) -> None:
        self.board = board

    def put(self, item: tuple[str, int, int, int]) -> None:
        self.board.update(*item)
