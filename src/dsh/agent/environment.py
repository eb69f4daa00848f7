"""The facts of the machine the system prompt states: platform, shell, date, git.

A model that is not told them guesses: GNU or BSD flags for ``sed -i``, last year in a changelog
header, ``git`` commands in a directory that is no repository. ``Environment`` holds them and
``environment_section`` turns it into a few lines of the system prompt, a pure function, so
tests and the bench state a fixed environment (``dsh.bench.runner.BENCH_ENVIRONMENT``) while a
face states the one ``detect`` reads from the real machine.

``detect`` reads cheaply: the platform from the standard library (on Linux the distribution's
name and version from ``os-release``: the userland tells more than a kernel build string), the
bash the ``bash`` tool runs asked its version once per process, today's local date, and the
workspace's git facts from ``.git/HEAD`` as a file (no ``git`` process), read as a small file
(:mod:`dsh.config.small_file`: a FIFO or a symlink to ``/dev/zero`` a repository put there is
left unread, with one warning, and no facts are stated). Those are a snapshot:
the session's system prompt is made once when it is opened (``dsh.agent.wiring``) and stays
byte-stable for the provider's prompt cache, so a branch switched during the session is not
seen, and a session reopened on another day states the new date (a ``resume`` header change).
"""

from __future__ import annotations

import functools
import logging
import os
import platform
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from dsh.config.small_file import KIB, UnreadableFile, read_small_file
from dsh.errors import printable_line
from dsh.tools.program_path import clean_path, find_program

log = logging.getLogger(__name__)

MAX_FACT_CHARS = 80
"""A stated fact longer than this (a branch name, a distribution's name) is cut."""
GIT_FILE_LIMIT = 8 * KIB
"""``HEAD`` or a ``.git`` file longer than this is not read: ``ref: refs/heads/NAME`` or
``gitdir: PATH`` is far shorter."""


@dataclass(frozen=True, slots=True)
class GitFacts:
    """The git repository the workspace is in, as its HEAD said when detected."""

    branch: str | None = None
    """The checked-out branch; None on a detached HEAD or a HEAD that could not be read."""
    detached_at: str | None = None
    """The short commit a detached HEAD points at."""


@dataclass(frozen=True, slots=True)
class Environment:
    """What the system prompt says about the machine the session runs on."""

    platform: str
    """``Linux (Debian GNU/Linux 12)``, ``macOS 14.5``…"""
    shell: str
    """The shell the ``bash`` tool runs: ``bash 5.2``, or ``bash`` when its version is unknown."""
    date: date
    """The session's date: local, when it was opened."""
    git: GitFacts | None
    """None: the workspace is in no git repository."""


def environment_section(environment: Environment) -> str:
    """The system prompt's lines for ``environment``."""
    return "\n".join(
        [
            "Environment (when this session was opened):",
            f"- Platform: {environment.platform}",
            f"- The bash tool runs: {environment.shell}",
            f"- Today's date: {environment.date.isoformat()}",
            f"- Git: {_git_line(environment.git)}",
        ]
    )


def _git_line(git: GitFacts | None) -> str:
    if git is None:
        return "the workspace is not in a git repository"
    line = "the workspace is in a git repository"
    if git.branch is not None:
        return f"{line}, on branch {git.branch}"
    if git.detached_at is not None:
        return f"{line}, detached HEAD at {git.detached_at}"
    return line


def detect(workspace: Path, *, today: Callable[[], date] | None = None) -> Environment:
    """The environment of this machine, with ``workspace``'s git facts and the date ``today()``
    gives (default: the local date now)."""
    return Environment(
        platform=platform_name(),
        shell=bash_shell(),
        date=(today or date.today)(),
        git=git_facts(workspace),
    )


def platform_name() -> str:
    """``platform.system()`` made readable: macOS with its version, Linux with its distribution
    (``os-release``'s name and version) when it says one."""
    system = platform.system()
    if system == "Darwin":
        release = _fact(platform.mac_ver()[0])
        return f"macOS {release}" if release else "macOS"
    if system == "Linux":
        try:
            os_release = platform.freedesktop_os_release()
        except OSError:
            return "Linux"
        name = " ".join(filter(None, (os_release.get("NAME"), os_release.get("VERSION_ID"))))
        distribution = _fact(name)
        return f"Linux ({distribution})" if distribution else "Linux"
    return _fact(system) or "unknown"


BASH_VERSION_SCRIPT = 'printf %s.%s "${BASH_VERSINFO[0]}" "${BASH_VERSINFO[1]}"'


@functools.cache
def bash_shell() -> str:
    """``bash MAJOR.MINOR`` of the ``bash`` the bash tool runs (found on PATH's absolute
    entries, :func:`~dsh.tools.program_path.find_program`: never a workspace's ``./bash``;
    asked once per process, with nothing of dsh's environment but that PATH); ``bash`` when it
    did not say, and says so when there is none."""
    program = find_program("bash")
    if program is None:
        return "bash (not found on PATH)"
    try:
        done = subprocess.run(
            [program, "-c", BASH_VERSION_SCRIPT],
            env={"PATH": clean_path(os.environ.get("PATH"))},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "bash"
    major, _, minor = done.stdout.partition(".")
    if done.returncode == 0 and major.isdigit() and minor.isdigit():
        return f"bash {major}.{minor}"
    return "bash"


def git_facts(workspace: Path) -> GitFacts | None:
    """The git repository ``workspace`` is in (it or a parent holds ``.git``: a directory, or a
    worktree's or submodule's file naming it), read from its ``HEAD``; None when there is none."""
    root = git_root(workspace)
    if root is None:
        return None
    marker = root / ".git"
    if marker.is_dir():
        return _head_facts(marker)
    git_dir = _linked_git_dir(marker)
    return _head_facts(git_dir) if git_dir is not None else GitFacts()


def git_root(workspace: Path) -> Path | None:
    """The nearest directory from ``workspace`` (absolute, not resolved) up that holds ``.git``
    (a directory, or a worktree's or submodule's file); None when there is none, or when a
    directory on the way cannot be looked into (git could not either)."""
    start = workspace.absolute()
    for directory in (start, *start.parents):
        marker = directory / ".git"
        try:
            if marker.is_dir() or marker.is_file():
                return directory
        except OSError:
            return None
    return None


def _linked_git_dir(marker: Path) -> Path | None:
    """The directory a ``.git`` file names (``gitdir: PATH``, relative to the file's directory)."""
    text = _git_file(marker)
    if text is None:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    return marker.parent / first.removeprefix("gitdir:").strip()


def _head_facts(git_dir: Path) -> GitFacts:
    text = _git_file(git_dir / "HEAD")
    if text is None:
        return GitFacts()
    head = text.strip()
    if head.startswith("ref:"):
        ref = head.removeprefix("ref:").strip()
        branch = _fact(ref.removeprefix("refs/heads/"))
        return GitFacts(branch=branch or None)
    if len(head) in (40, 64) and all(c in "0123456789abcdef" for c in head):
        return GitFacts(detached_at=head[:7])
    return GitFacts()


def _git_file(path: Path) -> str | None:
    """The text of git's small file ``path``; None when there is none or it is not UTF-8, and
    when it is not a regular file or too long, then said in one warning."""
    try:
        return read_small_file(path, GIT_FILE_LIMIT).decode("utf-8")
    except UnreadableFile as exc:
        if not exc.missing:
            log.warning("%s", printable_line(f"{path} not read for the git facts: {exc.reason}"))
        return None
    except UnicodeDecodeError:
        return None


def _fact(text: str) -> str:
    """``text`` as one short printable line for the prompt ("" when it has none)."""
    line = "".join(c for c in text.strip().split("\n")[0] if c.isprintable()).strip()
    return line[:MAX_FACT_CHARS]
