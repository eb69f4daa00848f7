"""The system prompt: a fixed base, the workspace, the project's AGENTS.md when present, and the
environment (``dsh.agent.environment``) last, so the part a date change touches is the end.

An AGENTS.md that cannot be instructions — binary (a NUL byte in its head), not UTF-8, not
readable, not a regular file (a FIFO, a symlink to ``/dev/zero``: it is read as a small file,
:mod:`dsh.config.small_file`, so neither hangs dsh) — is left out with one warning naming it and
why, as a prompt command file is; one longer than ``AGENTS_MAX_CHARS`` is cut there, and only
that much of it is read. It must lie in the workspace, as any file a tool reads: a symlink that
leads out of it (to ``~/.ssh/id_ed25519``, to your ``$DSH_HOME/config.toml``) is left out with
the same one warning, which never names where it leads, and nothing there is read.
"""

from __future__ import annotations

import codecs
import logging
from pathlib import Path
from typing import NamedTuple

from dsh.agent.environment import Environment, environment_section
from dsh.config.small_file import UnreadableFile, read_file_head
from dsh.errors import printable_line

log = logging.getLogger(__name__)

BASE_PROMPT = """\
You are dsh, a coding agent working in a software project on the user's machine.
Work in small, verifiable steps: read before you edit, run the tests after you change code,
and say plainly what you did and what is left. Use the tools to inspect and change files and to
run commands; never invent file contents or command output. Keep answers short."""

AGENTS_FILE = "AGENTS.md"
AGENTS_MAX_CHARS = 20_000
SNIFF_BYTES = 8192
"""A NUL byte among the first this many makes the file binary (as the file tools judge)."""


def system_prompt(workspace: Path, environment: Environment) -> str:
    """Base prompt + workspace line + AGENTS.md (truncated if huge) + the environment section:
    the same text for the same workspace, AGENTS.md and ``environment``. The recall tools'
    section follows once they are offered (``dsh.agent.recall_offer``)."""
    parts = [BASE_PROMPT, f"Workspace: {workspace}"]
    text = project_instructions(workspace / AGENTS_FILE, within=workspace)
    if text is not None:
        parts.append(f"Project instructions from {AGENTS_FILE}:\n{text}")
    parts.append(environment_section(environment))
    return "\n\n".join(parts)


def project_instructions(path: Path, *, within: Path) -> str | None:
    """The text of the instructions file ``path`` (cut at ``AGENTS_MAX_CHARS``), or None when
    there is none or it cannot be instructions (then said in one warning); ``within``: the
    workspace, which ``path`` must resolve inside."""
    text = _read_instructions(path, within)
    if text is None:
        return None
    if isinstance(text, _Refused):
        log.warning("%s", printable_line(f"{path} left out of the system prompt: {text.why}"))
        return None
    return text


class _Refused(NamedTuple):
    why: str


def _read_instructions(path: Path, within: Path) -> str | _Refused | None:
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
    if longer or len(text) > AGENTS_MAX_CHARS:
        text = text[:AGENTS_MAX_CHARS] + f"\n[{AGENTS_FILE} truncated]"
    return text
