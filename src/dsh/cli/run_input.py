"""``dsh run``'s prompts: its PROMPT arguments, ``--prompts-file``, and stdin.

- A PROMPT of ``-`` is the whole of stdin, one prompt.
- With no PROMPT and no ``--prompts-file``, a stdin that is not a terminal is that one prompt
  too (``echo "fix it" | dsh run``, as ``claude -p`` and ``codex exec`` read it); a terminal is
  refused at once, naming the ways to give one, rather than waiting for typed text.
- ``--prompts-file FILE`` is one prompt per line, blank lines skipped; ``-`` reads the lines
  from stdin, and ``/dev/null`` is an empty file. A file with no prompt, and nothing else to
  run, is refused in one line.

Stdin is read once: ``-`` and ``--prompts-file -`` together are refused. Every text is UTF-8 (a
prompt the log cannot store is refused before a session is written)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from dsh.config.small_file import UnreadableFile, read_named_file, read_stream_bounded
from dsh.errors import UsageError

STDIN = "-"
"""A PROMPT, or the ``--prompts-file``, that stands for stdin."""


def read_prompts(prompts: tuple[str, ...], prompts_file: Path | None) -> list[str]:
    """The run's prompts, in order: the PROMPT arguments, then the file's lines; stdin when
    neither gives one (module docstring). ``UsageError`` for anything refused."""
    from_file = prompts_file is not None and str(prompts_file) == STDIN
    if prompts.count(STDIN) + from_file > 1:  # stdin is read whole once: a second would be empty
        raise UsageError(
            "stdin is read once: give '-' as one PROMPT or as --prompts-file, not both"
            if from_file
            else "the prompt '-' (read from stdin) may be given once"
        )
    turns = [stdin_prompt() if prompt == STDIN else argument_prompt(prompt) for prompt in prompts]
    if prompts_file is not None:
        lines = file_prompts(prompts_file)
        if not lines and not turns:
            raise UsageError(
                f"--prompts-file {prompts_file} holds no prompt (blank lines are skipped)"
            )
        turns.extend(lines)
    if turns:
        return turns
    if _stdin_is_a_terminal():
        raise UsageError(
            "give at least one PROMPT, --prompts-file FILE, or a prompt on stdin "
            "(echo PROMPT | dsh run)"
        )
    return [stdin_prompt(given=False)]


def file_prompts(path: Path) -> list[str]:
    """The prompts of ``--prompts-file``: one per line, blank lines skipped, a leading UTF-8
    signature dropped."""
    name = f"--prompts-file {path}"
    if str(path) == STDIN:
        data = _stdin_bytes("--prompts-file -")
    elif _is_dev_null(path):  # "no prompts here", as shells and tools read it
        data = b""
    else:
        data = _named_file(path)
    text = utf8_text(data, name).removeprefix("\ufeff")  # an editor's "UTF-8 with signature"
    return [line for line in text.splitlines() if line.strip()]


def _is_dev_null(path: Path) -> bool:
    """True if ``path`` is the null device (by what it is, not its name: ``/dev/stdin`` may
    be it too)."""
    try:
        found, null = os.stat(path), os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(found.st_mode) and found.st_rdev == null.st_rdev


def _stdin_is_a_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (OSError, ValueError):  # closed
        return False


def _named_file(path: Path) -> bytes:
    """The bytes of ``--prompts-file`` (``read_named_file``: a pipe read to a limit, a device
    refused), or a UsageError naming it."""
    try:
        return read_named_file(path)
    except UnreadableFile as exc:
        raise UsageError(f"--prompts-file {exc}") from None


def _stdin_bytes(what: str) -> bytes:
    """All of stdin, bounded (``read_stream_bounded``)."""
    try:
        return read_stream_bounded(sys.stdin.buffer.fileno(), "stdin")
    except (UnreadableFile, OSError, ValueError) as exc:  # ValueError: no descriptor
        raise UsageError(f"{what} could not be read: {exc}") from None


def utf8_text(data: bytes, what: str) -> str:
    """``data`` decoded as UTF-8, or a UsageError naming ``what`` and the first bad byte: a
    prompt the log cannot store is refused before a session or a turn is written."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        byte = data[exc.start]
        raise UsageError(f"{what} is not UTF-8 text (byte 0x{byte:02x} on line {line})") from None


def argument_prompt(prompt: str) -> str:
    """A PROMPT argument; bytes that were not UTF-8 arrive as lone surrogates (PEP 383). A
    blank one (``dsh run "$UNSET"``) is refused, as an empty stdin and blank file lines are."""
    text = utf8_text(os.fsencode(prompt), "a PROMPT argument")
    if not text.strip():
        raise UsageError("a PROMPT argument is empty; give the prompt text")
    return text


def stdin_prompt(*, given: bool = True) -> str:
    """The whole of stdin as one prompt: for ``-`` (``given``), or for a run given no PROMPT
    whose stdin is not a terminal."""
    what = "the prompt '-'" if given else "the prompt on stdin"
    data = _stdin_bytes(what)
    text = utf8_text(data, "the prompt read from stdin").strip()
    if not text:
        if given:
            raise UsageError("the prompt '-' reads stdin, which was empty")
        raise UsageError(
            "no PROMPT given and stdin was empty: give a PROMPT, --prompts-file FILE, or pipe "
            "the prompt in"
        )
    return text
