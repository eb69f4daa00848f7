"""The words of ``/approval``, for every face that has it (the terminal UI, ``dsh web``'s
composer): what each approval mode means, the line that names the mode, the line that says it
changed, and the one-line refusal of anything but ``ask``, ``auto`` or ``read-only``.

What a face changes is its own business (the terminal UI: its process's policy; ``dsh web``:
the session's); the words are the same, so ``/approval`` reads the same wherever it is typed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast, get_args

from dsh.errors import UsageError, printable_line
from dsh.tools.approval import ALLOW_FLAG_NAMES, ApprovalMode
from dsh.tools.base import ToolKind

APPROVAL_MEANS: dict[str, str] = {
    "ask": "tools that change things ask first",
    "auto": "every tool call runs without asking but what tools.deny_commands refuses",
    "read-only": "only read tools and the commands tools.allow_commands lists run; the others "
    "are denied",
}
"""What each approval mode means, as ``/approval`` says it."""

APPROVAL_CHOICES = "ask, auto or read-only"


def allowed_flags(allow: Iterable[ToolKind]) -> list[str]:
    """``--allow``'s kinds as the flag spells them (``shell`` is ``bash``), sorted."""
    return sorted(ALLOW_FLAG_NAMES.get(kind, kind) for kind in allow)


def mode_text(mode: ApprovalMode, allow: Iterable[ToolKind]) -> str:
    """``ask (tools that change things ask first)``, with what ``--allow`` lets through."""
    allowed = allowed_flags(allow)
    extra = f"; --allow {','.join(allowed)} runs unasked" if allowed and mode != "auto" else ""
    return f"{mode} ({APPROVAL_MEANS[mode]}{extra})"


def shown_note(mode: ApprovalMode, allow: Iterable[ToolKind]) -> str:
    """What ``/approval`` without a mode answers."""
    return (
        f"Approval mode: {mode_text(mode, allow)}. /approval {APPROVAL_CHOICES} "
        "changes it for the rest of this run."
    )


def changed_note(mode: ApprovalMode, allow: Iterable[ToolKind]) -> str:
    """What ``/approval MODE`` answers once the mode is in use."""
    return (
        f"Approval mode for the rest of this run: {mode_text(mode, allow)}. The config "
        "file is unchanged."
    )


def chosen_mode(arg: str) -> ApprovalMode:
    """The mode ``/approval ARG`` names; ``UsageError`` (one line) for anything else."""
    if arg not in get_args(ApprovalMode):
        shown = printable_line(arg)
        raise UsageError(f"/approval takes {APPROVAL_CHOICES}, not {shown!r}.")
    return cast(ApprovalMode, arg)  # one of its values: checked above
