"""``/model`` against the models the server offers, for every face (the terminal UI, ``dsh
web``): the list ``/model`` shows, the current model marked, and the check ``/model NAME``
passes before it switches (``dsh.llm.model_list`` asks the server, bounded by its timeout).

A name the server does not list is refused in one line naming the closest it does list (a typo,
another case, a name the listed ones contain); when the list cannot be had (the server is down,
it has no models endpoint: a 404), the name is taken with a one-line warning that it was not
checked; a provider with no server to ask (the scripted or replayed model) takes any name, as
it did."""

from __future__ import annotations

import difflib
import re

from dsh.agent.model_command import model_note
from dsh.errors import UsageError
from dsh.llm.model_list import Listed, ModelList, NotListed

_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)")
"""A dated snapshot's suffix: Anthropic lists ``claude-sonnet-4-5-20250929`` and takes its
alias ``claude-sonnet-4-5`` too (as ``dsh.agent.billing`` reads the names)."""
CLOSE_MATCHES = 3
SHOWN_IN_NOTE = 50
"""At most this many models are listed in a note (a picker shows them all)."""


def is_listed(name: str, models: tuple[str, ...]) -> bool:
    """Whether ``name`` is a listed model, or the alias of a listed dated snapshot."""
    return name in models or any(
        m.startswith(name) and _SNAPSHOT.fullmatch(m, len(name)) is not None for m in models
    )


def close_matches(name: str, models: tuple[str, ...], n: int = CLOSE_MATCHES) -> list[str]:
    """The listed models ``name`` most likely meant: the same but for case, then those it
    is part of (``qwen`` → ``qwen2.5:7b``), then the spelling's nearest."""
    folded = name.casefold()
    found = [m for m in models if m.casefold() == folded]
    found += [m for m in models if folded in m.casefold() and m not in found]
    lowered = {m.casefold(): m for m in models}
    near = difflib.get_close_matches(folded, list(lowered), n=n, cutoff=0.5)
    found += [lowered[m] for m in near if lowered[m] not in found]
    return found[:n]


def checked_choice(name: str, provider: str, listed: ModelList) -> str | None:
    """Check ``/model NAME`` against what the server lists: None when the name is listed (or
    there is no list to check against), the warning line when the list could not be had;
    raises ``UsageError`` (one line, the closest names in it) for a name the list lacks."""
    if isinstance(listed, NotListed):
        return f"warning: could not list {provider}'s models ({listed.reason}): {name} not checked."
    if listed is None or is_listed(name, listed.models):
        return None
    if not listed.models:
        return None  # an empty list checks nothing
    close = close_matches(name, listed.models)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UsageError(
        f"{provider} does not list the model {name}{hint} (/model lists the "
        f"{len(listed.models)} it offers)"
    )


def listing_note(model: str, provider: str, window: int, listed: ModelList) -> str:
    """What ``/model`` without a name answers: the model in use (``model_note``), then the
    models the server lists with the current one marked ``*``, or why there is no list."""
    head = model_note(model, provider, window)
    if isinstance(listed, NotListed):
        return f"{head}\nCould not list {provider}'s models: {listed.reason}."
    if listed is None or not listed.models:
        return head
    lines = [f"{head}", f"{provider} lists {len(listed.models)} model(s) (* in use):"]
    lines += [f"  {'*' if m == model else ' '} {m}" for m in listed.models[:SHOWN_IN_NOTE]]
    if len(listed.models) > SHOWN_IN_NOTE:
        lines.append(f"    … and {len(listed.models) - SHOWN_IN_NOTE} more")
    if model not in listed.models and is_listed(model, listed.models):
        lines.append(f"  (in use: {model}, the alias of a listed snapshot)")
    elif model not in listed.models:
        lines.append(f"  (the model in use, {model}, is not among them)")
    return "\n".join(lines)


def public_list(listed: ModelList) -> dict[str, object]:
    """``{models, unavailable}`` for the web: ``models`` null when there is no list
    (``unavailable`` then says why, or is null for a provider with no server to ask)."""
    if isinstance(listed, Listed):
        return {"models": list(listed.models), "unavailable": None}
    reason = listed.reason if isinstance(listed, NotListed) else None
    return {"models": None, "unavailable": reason}
