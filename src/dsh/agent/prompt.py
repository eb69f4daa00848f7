"""The system prompt: a fixed base, the workspace, the instructions files, and the environment
(``dsh.agent.environment``) last, so the part a date change touches is the end.

The instructions (``instructions_section``), in this order: yours, ``$DSH_HOME/AGENTS.md``,
for every project; then, from the git root (the nearest directory holding ``.git`` from the
workspace up; with none, the workspace alone) down to the workspace, each directory's
``AGENTS.md``, else its ``CLAUDE.md``. Each comes under a heading naming it (relative to the
workspace: ``../AGENTS.md``), so a workspace with one ``AGENTS.md`` and nothing above says
``Project instructions from AGENTS.md:`` as it always did. Together they hold at most
``AGENTS_MAX_CHARS`` characters, given out from the nearest file (the workspace's) outwards, yours
last: a file cut there ends with ``[PATH truncated]``, one the limit leaves no room for is named
with ``[left out: …]`` (and one warning), so the model can still read it with a tool.

A file that cannot be instructions — binary (a NUL byte in its head), not UTF-8, not readable,
not a regular file (a FIFO, a symlink to ``/dev/zero``: it is read as a small file,
:mod:`dsh.config.small_file`, so neither hangs dsh) — is left out with one warning naming it and
why, as a prompt command file is; only ``AGENTS_MAX_CHARS`` characters of it are ever read. A
project's file must lie in the git root (the workspace when there is none), yours in
``$DSH_HOME``: a symlink that leads out (to ``~/.ssh/id_ed25519``, to your
``$DSH_HOME/config.toml``) is left out with the same one warning, which never names where it
leads, and nothing there is read. A session states the instructions read when it was opened
(``dsh.agent.wiring.session_instructions``), as it states its environment.
"""

from __future__ import annotations

import codecs
import logging
import os
from pathlib import Path
from typing import NamedTuple

from dsh.agent.environment import Environment, environment_section, git_root
from dsh.config.small_file import OUTSIDE, UnreadableFile, read_file_head
from dsh.errors import printable_line

log = logging.getLogger(__name__)

BASE_PROMPT = """\
You are dsh, a coding agent working in a software project on the user's machine.
Work in small, verifiable steps: read before you edit, run the tests after you change code,
and say plainly what you did and what is left. Use the tools to inspect and change files and to
run commands; never invent file contents or command output. Keep answers short."""

AGENTS_FILE = "AGENTS.md"
CLAUDE_FILE = "CLAUDE.md"
"""A directory's instructions when it has no ``AGENTS.md`` (Claude Code's name)."""
AGENTS_MAX_CHARS = 20_000
"""All the instructions files together hold at most this many characters."""
SNIFF_BYTES = 8192
"""A NUL byte among the first this many makes the file binary (as the file tools judge)."""
USER_SHOWN = "$DSH_HOME/AGENTS.md"
OUTSIDE_REPOSITORY = "it leads outside the git repository (a symlink on its way points out of it)"
OUTSIDE_HOME = "it leads outside $DSH_HOME (a symlink on its way points out of it)"


def system_prompt(workspace: Path, environment: Environment, *, home: Path | None = None) -> str:
    """Base prompt + workspace line + the instructions files (``home``: ``$DSH_HOME``, whose
    ``AGENTS.md`` comes first; None: not read) + the environment section: the same text for the
    same files and ``environment``. The recall tools' section follows once they are offered
    (``dsh.agent.recall_offer``)."""
    return prompt_with(workspace, environment, instructions_section(workspace, home=home))


def prompt_with(workspace: Path, environment: Environment, instructions: str | None) -> str:
    """The system prompt with ``instructions`` (``instructions_section``'s) as read already."""
    parts = [BASE_PROMPT, f"Workspace: {workspace}"]
    if instructions:
        parts.append(instructions)
    parts.append(environment_section(environment))
    return "\n\n".join(parts)


class _Text(NamedTuple):
    text: str
    """At most ``AGENTS_MAX_CHARS`` characters."""
    cut: bool
    """The file holds more than ``text``."""


class _Refused(NamedTuple):
    why: str


class _File(NamedTuple):
    path: Path
    heading: str
    shown: str
    """How the prompt names it: relative to the workspace, or ``$DSH_HOME/AGENTS.md``."""
    read: _Text


def instructions_section(workspace: Path, *, home: Path | None = None) -> str | None:
    """The instructions files' part of the system prompt, each under its heading, within
    ``AGENTS_MAX_CHARS`` (see the module's docstring); None when there is none."""
    files = _instructions_files(workspace, home)
    left = AGENTS_MAX_CHARS
    bodies: dict[int, str] = {}
    for index in reversed(range(len(files))):  # the nearest file first, yours last
        file = files[index]
        if left <= 0:
            _warn(file.path, f"the instructions files hold {AGENTS_MAX_CHARS:,} characters at most")
            bodies[index] = (
                f"[left out: over the {AGENTS_MAX_CHARS:,} characters all instructions files hold]"
            )
            continue
        text = file.read.text[:left]
        left -= len(text)
        cut = file.read.cut or len(text) < len(file.read.text)
        bodies[index] = f"{text}\n[{file.shown} truncated]" if cut else text
    parts = [f"{file.heading}:\n{bodies[i]}" for i, file in enumerate(files)]
    return "\n\n".join(parts) if parts else None


def _instructions_files(workspace: Path, home: Path | None) -> list[_File]:
    """Yours, then the project's from the git root down to the workspace, as read."""
    start = workspace.absolute()
    root = git_root(start)
    within = start if root is None else root
    chain = [d for d in (start, *start.parents) if d.is_relative_to(within)]
    files: list[_File] = []
    for directory in reversed(chain):
        for name in (AGENTS_FILE, CLAUDE_FILE):  # its AGENTS.md, else its CLAUDE.md
            path = directory / name
            read = _read_instructions(path, within, OUTSIDE if root is None else OUTSIDE_REPOSITORY)
            if isinstance(read, _Text):
                shown = os.path.relpath(path, start)
                files.append(_File(path, f"Project instructions from {shown}", shown, read))
            if read is not None:  # a refused AGENTS.md is said, not replaced by CLAUDE.md
                break
    if home is not None:
        path = home / AGENTS_FILE
        ours = {os.path.realpath(file.path) for file in files}
        if os.path.realpath(path) not in ours:  # $DSH_HOME is no project's directory
            read = _read_instructions(path, home, OUTSIDE_HOME)
            if isinstance(read, _Text):
                heading = f"The user's own instructions, for every project ({USER_SHOWN})"
                files.insert(0, _File(path, heading, USER_SHOWN, read))
    return files


def project_instructions(path: Path, *, within: Path) -> str | None:
    """The text of the one instructions file ``path`` (cut at ``AGENTS_MAX_CHARS``), or None
    when there is none or it cannot be instructions (then said in one warning); ``within``: the
    directory ``path`` must resolve inside."""
    read = _read_instructions(path, within, OUTSIDE)
    if not isinstance(read, _Text):
        return None
    return f"{read.text}\n[{path.name} truncated]" if read.cut else read.text


def _read_instructions(path: Path, within: Path, outside: str) -> _Text | _Refused | None:
    """``path`` read, or refused and said in one warning (``outside``: the reason when it leads
    out of ``within``); None when there is no such file."""
    read = _read(path, within)
    if isinstance(read, _Refused):
        _warn(path, outside if read.why == OUTSIDE else read.why)
    return read


def _warn(path: Path, why: str) -> None:
    log.warning("%s", printable_line(f"{path} left out of the system prompt: {why}"))


def _read(path: Path, within: Path) -> _Text | _Refused | None:
    try:  # a UTF-8 character is at most 4 bytes
        head, longer = read_file_head(path, AGENTS_MAX_CHARS * 4 + 4, within=within)
    except UnreadableFile as exc:
        return None if exc.missing else _Refused(exc.reason)
    if b"\x00" in head[:SNIFF_BYTES]:
        return _Refused("it is a binary file")
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:  # a cut in the middle of a character is not an error
        text = decoder.decode(head, final=not longer)
    except UnicodeDecodeError as exc:
        return _Refused(f"it is not UTF-8 (byte {exc.start})")
    return _Text(text[:AGENTS_MAX_CHARS], longer or len(text) > AGENTS_MAX_CHARS)
