"""The directories dsh writes its own data in are readable by their owner alone.

A session log holds whole transcripts — files the model read, command output, provider error
bodies — and the caches beside it are derived from it, so ``$DSH_HOME`` and every directory dsh
makes in it are created ``0700``: another user on the machine cannot list or read them, however
the files inside are made. ``Path.mkdir(parents=True)`` gives the parents it creates the default
mode, so each missing level is made here one at a time. A directory that already exists keeps
its mode (a ``$DSH_HOME`` a user shares on purpose stays shared).
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_MODE = 0o700


def make_private_directory(path: Path) -> None:
    """Create ``path`` and each missing parent ``0700``; nothing when it is a directory
    already. Raises as ``Path.mkdir(parents=True, exist_ok=True)`` would (a file in the way, no
    permission)."""
    missing: list[Path] = []
    level = path
    while not os.path.lexists(level) and level.parent != level:
        missing.append(level)
        level = level.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_MODE)
        except FileExistsError:  # made meanwhile by another process: fine when a directory
            if not directory.is_dir():
                raise
    path.mkdir(exist_ok=True)  # a file (or a dangling symlink) in the way raises here
