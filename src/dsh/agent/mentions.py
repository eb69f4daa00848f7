"""``@path`` in a prompt attaches that file (or directory listing) for the model.

A prompt that names ``@src/app.py`` sends the model, after the prompt, a note holding that
file as ``read_file`` would show it (numbered lines, long lines cut, known secret values
masked), so it does not spend a step reading what the person pointed at; ``@src/`` attaches
the directory's listing. Each attachment is a note of its own in the log (a user-role message
from the ``attach`` plugin): people see it as ``Context from attach``, collapsed in the
terminal UI, and compaction and the recall tools treat it as any other note.

A mention is ``@`` at the start of the prompt or after a space or an opening bracket or quote
(``me@example.com`` is not one), then the path up to the next space, or ``@"a path with
spaces"``; trailing punctuation (``see @a.py.``) is dropped when the path without it exists.
A word that names nothing (``@decorator``, ``@here``) stays text and attaches nothing. A path
that exists but cannot be attached (outside the workspace, a binary file) is named in a note
with the reason, so the model and the transcript both say why. Each path attaches once, at
most ``MAX_ATTACHMENTS`` per prompt, and all of them together at most a quarter of the context
window (about one character per window token): a file past that share is cut at a line with
the ``read_file`` offset to read on. ``tools.attach_mentions = false`` turns this off.

The files are read once per turn, before it starts (``read_attachments``): the prompt is
checked against the window with them (``dsh.agent.room``), and the turn sends them as read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dsh.agent.loggable import loggable_text
from dsh.errors import ToolError
from dsh.events import ATTACH_PLUGIN, Message, PluginSource, TextBlock
from dsh.tools.files import DEFAULT_READ_LIMIT, MAX_READ_CHARS, list_dir, read_window
from dsh.tools.secrets import SecretPolicy
from dsh.tools.workspace import display_path, resolve_in_workspace

"""The plugin name of an attachment note (``Context from attach`` in the transcript)."""
MAX_ATTACHMENTS = 20
TRAILING = ".,;:!?)]}'\"`"
"""Punctuation a mention may end with that is not part of its path."""
MENTION = re.compile(r"""(?:^|(?<=[\s(\[{'"`]))@(?:"([^"\n]+)"|([^\s"@][^\s"]*))""")


def mentioned_paths(prompt: str, workspace: Path) -> list[str]:
    """The paths ``prompt`` mentions with ``@``, in order, each once: a quoted path as given,
    an unquoted one without the trailing punctuation that makes it name nothing."""
    found: list[str] = []
    for match in MENTION.finditer(prompt):
        quoted, bare = match.groups()
        path = quoted if quoted is not None else _without_trailing(bare, workspace)
        if path and path not in found:
            found.append(path)
    return found


def _without_trailing(word: str, workspace: Path) -> str:
    """``word`` less trailing punctuation, as long as the longer form names nothing."""
    while word and word[-1] in TRAILING and not _exists(word, workspace):
        word = word[:-1]
    return word


def _exists(path: str, workspace: Path) -> bool:
    try:
        given = Path(path).expanduser()
    except RuntimeError:  # ``~name`` for a user that does not exist
        return False
    candidate = given if given.is_absolute() else workspace / given
    try:
        return candidate.exists()
    except (OSError, ValueError):  # a name too long, a NUL
        return False


@dataclass(frozen=True, slots=True)
class Attachment:
    path: str
    """The path as mentioned."""
    text: str
    """What the model is shown: a heading line, then the file or listing (or why not)."""
    plugin: str = ATTACH_PLUGIN
    """Who adds the note: ``attach``, or ``recall`` (``dsh.agent.recall_matches``)."""


def attach(
    prompt: str, workspace: Path, secrets: SecretPolicy, *, budget_chars: int
) -> list[Attachment]:
    """The attachments ``prompt``'s mentions make (see the module docstring); blocking file
    reads, run it in a thread."""
    attachments: list[Attachment] = []
    left = budget_chars
    paths: list[str] = []
    seen: set[Path] = set()
    for path in mentioned_paths(prompt, workspace):
        if not _exists(path, workspace):
            continue
        try:
            resolved = resolve_in_workspace(path, workspace)
        except ToolError:
            paths.append(path)  # its note says why it is not attached
            continue
        if resolved not in seen:
            seen.add(resolved)
            paths.append(path)
    for path in paths[:MAX_ATTACHMENTS]:
        text = _attachment_text(path, workspace, secrets, max_chars=max(left, 0))
        left -= len(text)
        attachments.append(Attachment(path, secrets.mask(text)))
    if len(paths) > MAX_ATTACHMENTS:
        rest = ", ".join(f"@{p}" for p in paths[MAX_ATTACHMENTS:])
        text = (
            f"[attached] Not attached: {rest} (at most {MAX_ATTACHMENTS} paths are attached "
            "per prompt; read them with read_file or list_dir)"
        )
        attachments.append(Attachment(paths[MAX_ATTACHMENTS], secrets.mask(text)))
    return attachments


def _attachment_text(path: str, workspace: Path, secrets: SecretPolicy, *, max_chars: int) -> str:
    try:
        resolved = resolve_in_workspace(path, workspace, must_exist=True)
        shown = display_path(resolved, workspace)
        if max_chars <= 0:
            return (
                f"[attached] {shown} was not attached: the attachments before it fill the "
                "share of the context window attachments may take; read it with read_file "
                "or list_dir"
            )
        if resolved.is_dir():
            listing = _within(list_dir(path, workspace), max_chars)
            return f"[attached] The user attached the directory {shown} (its entries):\n{listing}"
        cap = min(max_chars, MAX_READ_CHARS)
        body = read_window(path, workspace, 1, DEFAULT_READ_LIMIT, secrets, max_chars=cap)
        return f"[attached] The user attached {shown} (as read_file shows it):\n{body}"
    except ToolError as refused:
        return f"[attached] @{path} was not attached: {refused}"
    except OSError as failed:  # unreadable: permissions, a file gone since it was named
        return f"[attached] @{path} was not attached: {failed.strerror or failed}"


def _within(listing: str, max_chars: int) -> str:
    """``listing`` cut at a whole entry to about ``max_chars``, naming what was left out."""
    if len(listing) <= max_chars:
        return listing
    entries = listing.splitlines()
    kept = listing[:max_chars].count("\n")
    return "\n".join(
        [*entries[:kept], f"({len(entries) - kept} more entries; use list_dir or glob)"]
    )


def read_attachments(
    prompt: str, workspace: Path, secrets: SecretPolicy, *, context_window: int
) -> tuple[Attachment, ...]:
    """What ``prompt``'s mentions attach in a ``context_window``-token window (nothing for a
    prompt without an ``@``); blocking file reads, run it in a thread on an event loop. Read
    once per turn: what the room check counts (``dsh.agent.room``) is what the turn sends."""
    if "@" not in prompt:
        return ()
    return tuple(attach(prompt, workspace, secrets, budget_chars=context_window))


def attachment_notes(attachments: Sequence[Attachment], *, turn: int) -> list[Message]:
    """The notes that follow turn ``turn``'s prompt: one per attachment, in mention order."""
    return [
        Message(
            id=f"attach-{turn}-{n}",
            role="user",
            content=(TextBlock(text=loggable_text(a.text)),),
            source=PluginSource(plugin=a.plugin),
        )
        for n, a in enumerate(attachments, 1)
    ]
