"""Where git looks for the hooks it runs on the user's next commit, as git itself says.

:func:`hooks_dir` asks git (``git rev-parse --git-path hooks``, run in the workspace): the
directory a repository's ``core.hooksPath`` names, read from its config as git reads it
(includes, a worktree's own config, ``~`` expanded; a relative one taken from the repository's
top level, where git runs hooks), else the repository's ``hooks`` under its git directory. It
is asked afresh each time, so a config changed a moment ago is what counts; reading it runs
nothing a repository's config could name (no index refresh: no filesystem monitor), and git
runs as ``dsh.tools.own_git`` runs it (the scrubbed environment, no fetch). No git on
``PATH``, a workspace in no repository, a repository git refuses (``safe.directory``), or git taking
longer than ``GIT_TIMEOUT_S``: there is no hooks directory to name, and None says so.

:func:`runs_as_hook` tells whether a file of that directory is one git would run: git runs
``<hooks dir>/<hook name>`` and nothing else there (``HOOK_NAMES``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from dsh.tools.own_git import run_git

GIT_TIMEOUT_S = 3.0
"""Git answers this in milliseconds; a git that hangs (a stalled network disk) is given up on."""

HOOK_NAMES = frozenset(
    {
        "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
        "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
        "post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
        "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
        "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist",
        "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit", "post-index-change",
    }
)  # fmt: skip
"""The hooks git runs (githooks(5)), each from ``<hooks dir>/<name>``."""


def hooks_dir(workspace: Path) -> Path | None:
    """The directory git runs this workspace's repository's hooks from (resolved: symlinks
    followed), or None when git names none (see the module docstring)."""
    try:
        done = run_git(
            workspace, "rev-parse", "--git-path", "hooks", timeout=GIT_TIMEOUT_S, filters_off=False
        )
    except (OSError, subprocess.TimeoutExpired):  # no git, no such directory, or a hung git
        return None
    shown = os.fsdecode(done.stdout).removesuffix("\n")
    if done.returncode != 0 or not shown or "\n" in shown:
        return None
    try:
        return (workspace / shown).resolve()  # relative to where git ran; an absolute one stays
    except (OSError, RuntimeError):
        return None


def runs_as_hook(name: str) -> bool:
    """True if git would run a file of this name in the hooks directory (compared as a
    case-insensitive disk compares it; Git for Windows also runs ``<hook>.exe``)."""
    folded = name.casefold()
    return folded in HOOK_NAMES or folded.removesuffix(".exe") in HOOK_NAMES
