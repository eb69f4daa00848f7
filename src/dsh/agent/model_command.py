"""``/model`` for every face that has it (the terminal UI, ``dsh web``'s composer): the name its
argument gives, the line that names the model the next turns run on, and the line that says it
changed, with the window the next turns run in.

A window the session set (``--context-window``, ``provider.context_window``, or the one a
reopened session recorded as set: ``dsh.agent.asked_window``) stays when ``/model`` moves it to
another model, as it stays when a reopen's ``--model`` does (``dsh.agent.session_settings``);
a window its server gave (asked, or the default assumed when it said none) is asked of the new
model's (``switched``). The line says which (``switched_note``).

What a face changes is its own business (the terminal UI: its process's route; ``dsh web``: the
session's); the names it takes and the words are the same, so ``/model`` reads the same
wherever it is typed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.agent.asked_window import with_own_window
from dsh.config import ProviderSettings, model_name_problem
from dsh.errors import UsageError

if TYPE_CHECKING:  # only named: this module stays light
    from dsh.agent.runtime import Route


def model_name(arg: str) -> str | None:
    """The model ``/model ARG`` names: ``ARG`` without the white space around it, spaces inside
    it kept (a server may list a model as ``Qwen2.5 7B Instruct``); None when there is none
    (``/model`` alone names the model in use). A name with a character that does not print (a
    line break, a tab, a terminal escape, a bidi control) is refused with ``UsageError`` in one
    line, the character shown as its escape (``dsh.config.model_name_problem``, the rule the
    config and ``--model`` say too)."""
    name = arg.strip()
    if not name:
        return None
    if (problem := model_name_problem(name)) is not None:
        raise UsageError(f"/model {problem}")
    return name


def model_note(model: str, provider: str, window: int) -> str:
    """What ``/model`` without a name answers."""
    return (
        f"Model: {model} (provider {provider}, context window {window} tokens). "
        "/model NAME switches for the next turns."
    )


def switched(
    route: Route, own: ProviderSettings, configured: ProviderSettings, before: int | None
) -> tuple[Route, str]:
    """The route ``/model NAME`` moves the session to, and the line that says it.

    ``route`` is the new model's resolved on the ``configured`` settings (the flags over the
    config: in their window, else the one its server reports or its provider knows); ``own``,
    the session's own (its window: the flags', else one it recorded as set, else the config's;
    None when its server gave it: the new model's is asked); ``before``, the window the session
    ran in. A window the session set stays (``with_own_window``), as on a reopen given
    ``--model``, and the line says so when the flags or the config set it, or when it is not
    the new model's own."""
    window = own.context_window
    routed = with_own_window(route, window)
    set_here = window == configured.context_window  # the flags' or the config's
    kept = window is not None and (set_here or window != route.context_window)
    said = switched_note(routed.model, routed.context_window, kept=kept, before=before)
    return routed, said


def switched_note(
    model: str, window: int | None = None, *, kept: bool = False, before: int | None = None
) -> str:
    """What ``/model NAME`` answers once the next turns will run on ``model`` in ``window``
    tokens: ``kept``, the window the session set, which stays; else the new model's, said with
    the one it replaces (``before``) when that differs."""
    line = f"Model for the next turns: {model}."
    if window is None:
        return line
    if kept:
        return f"{line} Its context window stays {window:,} tokens (set for this session)."
    if before is not None and before != window:
        return f"{line} Context window: {window:,} tokens (was {before:,})."
    return f"{line} Context window: {window:,} tokens."
