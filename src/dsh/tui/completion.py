"""Tab completion in the composer (``dsh.tui.prompt``): a ``/command`` at the start of the draft,
or an ``@path`` of the workspace; the candidates, which the composer completes to their common
prefix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dsh.agent.path_completion import common_prefix, mention, path_candidates


@dataclass(frozen=True, slots=True)
class Completion:
    start: int
    """Offset in the draft where the completed word starts."""
    end: int
    candidates: tuple[str, ...]
    """Full replacements for ``draft[start:end]``, sorted."""

    @property
    def common(self) -> str:
        return common_prefix(self.candidates)


def complete_command(draft: str, commands: Sequence[str]) -> Completion | None:
    """``/na`` at the start of a one-word draft: the commands it may begin."""
    if not draft.startswith("/") or any(c.isspace() for c in draft):
        return None
    word = draft[1:].lower()
    found = tuple(sorted(f"/{c}" for c in commands if c.startswith(word)))
    return Completion(0, len(draft), found) if found else None


def complete_path(draft: str, cursor: int, workspace: Path) -> Completion | None:
    """``@some/pa`` ending at ``cursor``: the workspace entries it may name, as
    ``dsh.agent.path_completion`` finds them (directories end in ``/``; hidden entries only when
    the typed part starts with a dot; nothing outside the workspace).

    A name with a space or a quote in it is inserted quoted, ``@"my notes.md"``, the form a
    mention of it takes (``dsh.agent.mentions``; ``dsh.agent.path_completion.mention``, as
    ``dsh web``'s composer inserts it); a quoted directory is left open, ``@"my dir/``, so
    completing goes on inside it, and ``@"my d`` completes as typed."""
    quoted = _open_quote(draft, cursor)
    if quoted is not None:
        start, typed = quoted, draft[quoted + 2 : cursor]
    else:
        start = cursor
        while start > 0 and not draft[start - 1].isspace():
            start -= 1
        word = draft[start:cursor]
        if not word.startswith("@"):
            return None
        typed = word[1:]
    names = path_candidates(typed, workspace)
    found = tuple(mention(name, quoted=quoted is not None) for name in names)
    return Completion(start, cursor, found) if found else None


def _open_quote(draft: str, cursor: int) -> int | None:
    """Where an ``@"`` whose quote is still open at ``cursor`` starts (on the cursor's line)."""
    line_start = draft.rfind("\n", 0, cursor) + 1
    at = draft.rfind('@"', line_start, cursor)
    if at < 0 or '"' in draft[at + 2 : cursor]:
        return None
    if at > 0 and not (draft[at - 1].isspace() or draft[at - 1] in "([{'\"`"):
        return None  # inside a word: not a mention
    return at
