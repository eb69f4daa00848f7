"""Where git looks for what it runs on the user's next git command, as git itself says.

:func:`git_layout` asks git, run in the workspace as ``dsh.tools.own_git`` runs it (the
scrubbed environment, no fetch), two things each time it is called, so a config changed a
moment ago is what counts; reading them runs nothing a repository's config could name (no index
refresh: no filesystem monitor):

- ``git rev-parse --git-path hooks --git-dir --git-common-dir --show-cdup``: the directory
  hooks run from (the one a repository's ``core.hooksPath`` names, read from its config as git
  reads it: includes, a worktree's own config, ``~`` expanded; a relative one taken from the
  repository's top level, where git runs hooks; else ``hooks`` under its git directory), the
  git directories themselves, whatever their name (``git init --separate-git-dir=gitdata``, a
  ``gitdir:`` file, a bare repository), and the work tree's top level;
- ``git config --list --show-origin --includes`` (with that git directory): every config file
  git reads that sets something, and every file an ``include.path`` or ``includeIf.<…>.path``
  names (relative to the file naming it, ``~`` expanded), whether or not it exists yet or its
  condition holds now, since a write can make it so; and every setting, of which those git
  runs name programs (:mod:`dsh.tools.git_programs`: ``core.fsmonitor = ./x``, a relative
  path taken from that top level and from the workspace).

To those it adds the user's and the system's config files as git finds them, which git names
only once they set something: ``$GIT_CONFIG_GLOBAL``, else ``~/.gitconfig`` and
``$XDG_CONFIG_HOME/git/config`` (``~/.config/git/config``); ``$GIT_CONFIG_SYSTEM``, else
``/etc/gitconfig``, unless ``GIT_CONFIG_NOSYSTEM``. No git on ``PATH``, a workspace in no
repository, a repository git refuses (``safe.directory``), or git taking longer than
``GIT_TIMEOUT_S``: git names no hooks directory nor git directory, and only those last files
(and what git's config listing gave, if it answered) are known.

:func:`runs_as_hook` tells whether a file of the hooks directory is one git would run: git runs
``<hooks dir>/<hook name>`` and nothing else there (``HOOK_NAMES``). :func:`looks_like_git_dir`
tells a directory git would take for a repository's (a bare one's, a separate one's): one
with ``HEAD``, ``objects/`` and ``refs/``, as git checks.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dsh.tools.git_attributes import attributes_files, drivers, template_dirs
from dsh.tools.git_programs import NamedProgram, named_programs
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


@dataclass(frozen=True, slots=True)
class GitLayout:
    """What git runs or reads on the user's next git command, as far as it lies in files
    (every path resolved: symlinks followed)."""

    hooks: Path | None
    """The directory git runs this repository's hooks from, or None (no repository)."""
    git_dirs: tuple[Path, ...]
    """The repository's git directory and its common one (a linked worktree's differ)."""
    config_files: tuple[Path, ...]
    """Every config file git reads, or would read once it exists or its condition holds."""
    programs: tuple[NamedProgram, ...] = ()
    """Every file a setting of those names as a program git runs
    (:mod:`dsh.tools.git_programs`)."""
    drivers: tuple[str, ...] = ()
    """The settings that define a driver running a program (``filter.lfs.process``), which
    the attributes route files through (:mod:`dsh.tools.git_attributes`)."""
    attributes_files: tuple[Path, ...] = ()
    """The attributes files a config or the environment names (``core.attributesFile``)."""
    templates: tuple[Path, ...] = ()
    """The template directories git copies into a repository it makes (``init.templateDir``)."""


def git_layout(workspace: Path) -> GitLayout:
    """What git names for ``workspace`` (see the module docstring)."""
    hooks, git_dirs, top = _rev_parse(workspace)
    files, entries = _listed_config(workspace, git_dirs[0] if git_dirs else None)
    files += [path for path in _users_config_files(os.environ) if path not in files]
    here = _resolved(workspace) or workspace
    bases = [here] if top is None or top == here else [top, here]
    programs = named_programs(entries, bases)
    attributes = attributes_files(entries, bases, os.environ)
    templates = template_dirs(entries, bases, os.environ)
    return GitLayout(
        hooks, git_dirs, tuple(files), programs, drivers(entries), attributes, templates
    )


def hooks_dir(workspace: Path) -> Path | None:
    """The directory git runs this workspace's repository's hooks from (resolved: symlinks
    followed), or None when git names none (see the module docstring)."""
    return _rev_parse(workspace)[0]


def _rev_parse(workspace: Path) -> tuple[Path | None, tuple[Path, ...], Path | None]:
    """The hooks directory, the git directories and the work tree's top level (None in a bare
    repository) git names for ``workspace``."""
    try:
        done = run_git(
            workspace, "rev-parse", "--git-path", "hooks", "--git-dir", "--git-common-dir",
            "--show-cdup", timeout=GIT_TIMEOUT_S, filters_off=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):  # no git, no such directory, or a hung git
        return None, (), None
    # --show-cdup: an empty line at the top level, none at all in a bare repository
    lines = os.fsdecode(done.stdout).removesuffix("\n").split("\n")
    if done.returncode != 0 or len(lines) not in (3, 4) or not all(lines[:3]):
        return None, (), None  # a path with a newline in it cannot be told apart: none named
    try:  # relative to where git ran; an absolute one stays
        hooks, *git_dirs, top = ((workspace / line).resolve() for line in [*lines, ""][:4])
    except (OSError, RuntimeError):
        return None, (), None
    return hooks, tuple(dict.fromkeys(git_dirs)), top if len(lines) == 4 else None


def _listed_config(
    workspace: Path, git_dir: Path | None
) -> tuple[list[Path], list[tuple[str, str]]]:
    """The config files git's own listing names (those that set something, and those an
    include names, relative to the file naming it), and every ``(key, value)`` it lists."""
    with_dir = () if git_dir is None else (f"--git-dir={git_dir}",)
    try:
        done = run_git(
            workspace, *with_dir, "config", "--list", "--show-origin", "--includes", "-z",
            timeout=GIT_TIMEOUT_S, filters_off=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return [], []
    if done.returncode != 0:  # a config git cannot read stops git itself too
        return [], []
    fields = done.stdout.split(b"\0")
    found: list[Path] = []
    entries: list[tuple[str, str]] = []
    for origin, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = (os.fsdecode(part) for part in entry.partition(b"\n"))
        entries.append((key, value))  # the command line's too: the user's GIT_CONFIG_* ones
        if not origin.startswith(b"file:"):
            continue  # the command line's settings (dsh's own among them), a blob, stdin
        named = Path(os.fsdecode(origin.removeprefix(b"file:")))
        paths = [named]
        if _is_include(key):
            target = _included(value, named)
            paths += [] if target is None else [target]
        for path in paths:
            resolved = _resolved(workspace / path)
            if resolved is not None and resolved not in found:
                found.append(resolved)
    return found, entries


def _is_include(key: str) -> bool:
    """``include.path`` or ``includeIf.<condition>.path`` (git lists section and key lower
    case, the condition as written)."""
    return key == "include.path" or (key.startswith("includeif.") and key.endswith(".path"))


def _included(value: str, naming: Path) -> Path | None:
    """The file an include's ``value`` names, as git finds it from the file ``naming``."""
    if value.startswith("~"):
        expanded = os.path.expanduser(value)
        return None if expanded.startswith("~") else Path(expanded)
    if not value or value.startswith("%(prefix)/"):
        return None  # nothing, or under git's install prefix: not a workspace file
    return naming.parent / value  # an absolute value stays absolute


def _users_config_files(environ: Mapping[str, str]) -> list[Path]:
    """The user's and the system's config files where git looks for them."""
    home = environ.get("HOME")
    paths: list[str] = []
    if environ.get("GIT_CONFIG_GLOBAL"):
        paths.append(environ["GIT_CONFIG_GLOBAL"])
    elif home:
        xdg = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        paths += [os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config")]
    if environ.get("GIT_CONFIG_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        paths.append(environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    return [p for p in (_resolved(Path(path)) for path in paths) if p is not None]


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop names no file git could read
        return None


def looks_like_git_dir(directory: Path) -> bool:
    """True if git would take ``directory`` for a repository's git directory: ``HEAD``,
    ``objects/`` and ``refs/`` in it."""
    try:
        return (
            (directory / "HEAD").is_file()
            and (directory / "objects").is_dir()
            and (directory / "refs").is_dir()
        )
    except OSError:
        return False


def runs_as_hook(name: str) -> bool:
    """True if git would run a file of this name in the hooks directory (compared as a
    case-insensitive disk compares it; Git for Windows also runs ``<hook>.exe``)."""
    folded = name.casefold()
    return folded in HOOK_NAMES or folded.removesuffix(".exe") in HOOK_NAMES
