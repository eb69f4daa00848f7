"""``dsh PROMPT``: the terminal UI with PROMPT sent as its first turn, as ``claude "…"`` and
``codex "…"`` open theirs; and which first word is a prompt rather than a command.

The rule never shadows a command: a first argument that names one is that command. Any other
is the prompt, with the words after it (``dsh fix the bug`` sends ``fix the bug``), except one
word without a space that is close to a command's name (``sesions``, ``runn``): that is refused
as a likely typo, naming the command, and how to send it anyway (``dsh -- sesions``: after
``--`` every word is the prompt, a command's name too). The flags of the UI go before or after
the prompt (``dsh --continue "and the tests"``, ``dsh "fix it" --provider anthropic``); one given
on both sides is refused.

``dsh -p PROMPT`` (``--print``) is ``dsh run PROMPT`` with the same options, as ``claude -p``
runs headless: ``dsh.cli.main`` rewrites the command line before it is parsed
(``dsh.cli.main.as_run``), so this module loads only for a prompt.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

import click

from dsh.cli.options import (
    ApprovalFlags,
    PathlibPath,
    RouteFlags,
    approval_options,
    route_options,
)

if TYPE_CHECKING:
    from pathlib import Path

PROMPT = "PROMPT"
"""The name the UI-with-a-prompt runs under (``dsh PROMPT --help``, its usage errors)."""

TYPO_CUTOFF = 0.8
"""How alike a one-word prompt must be to a command's name to be taken for its typo
(``difflib``'s ratio: ``sesions`` 0.93, ``runn`` 0.86; ``test`` is 0.67 from ``trust``)."""

BEFORE = "dsh.before_prompt"
"""``ctx.meta`` key: the UI flags given before the prompt, handed on by the group."""


def typo_of(word: str, commands: Iterable[str]) -> str | None:
    """The command a one-word ``word`` most likely misspells (None: it reads as a prompt)."""
    if any(c.isspace() for c in word):
        return None
    near = difflib.get_close_matches(word, list(commands), n=1, cutoff=TYPO_CUTOFF)
    return near[0] if near else None


def refuse_typo(word: str, command: str) -> None:
    """The one-line refusal of a first word that looks like ``command`` misspelt."""
    raise click.UsageError(
        f"no command {word!r} (did you mean {command}?); to send it as the first prompt: "
        f"dsh -- {word}"
    )


@click.command(PROMPT)
@click.argument("words", nargs=-1, required=True)
@click.option(
    "--cwd",
    "workspace_dir",
    type=PathlibPath(exists=True, file_okay=False),
    help="Workspace for the UI's tools (default: here).",
)
@route_options
@approval_options
def prompt_command(
    words: tuple[str, ...],
    workspace_dir: Path | None,
    route_flags: RouteFlags,
    approval_flags: ApprovalFlags,
) -> None:
    """Open the terminal UI with the words given sent as its first prompt."""
    from dsh.cli.tui import launch  # Textual loads only when the UI is wanted

    prompt = " ".join(words)
    if not prompt.strip():
        raise click.UsageError("the prompt is empty")
    before: dict[str, Any] = click.get_current_context().meta.get(BEFORE, {})
    route = _merged_route(before.get("route_flags") or RouteFlags(), route_flags)
    route.check()
    given_before = before.get("approval_flags") or ApprovalFlags()
    approval = ApprovalFlags(
        yes=given_before.yes or approval_flags.yes, allow=given_before.allow | approval_flags.allow
    )
    if workspace_dir is not None and before.get("workspace_dir") is not None:
        raise click.UsageError("--cwd given both before and after the prompt: give it once")
    launch(
        before.get("resume"),
        False,
        workspace_dir or before.get("workspace_dir"),
        route_flags=route,
        approval_flags=approval,
        last=bool(before.get("last")),
        first_prompt=prompt,
    )


def _merged_route(before: RouteFlags, after: RouteFlags) -> RouteFlags:
    """The route flags given before the prompt with those after it; one given on both sides is
    refused."""
    both = set(before.given()) & set(after.given())
    if both:
        raise click.UsageError(
            f"{', '.join(sorted(both))} given both before and after the prompt: give it once"
        )
    chosen = {
        f.name: getattr(after, f.name) for f in fields(after) if getattr(after, f.name) is not None
    }
    return replace(before, **chosen)
