"""``/context`` and ``/cost`` in the terminal UI: the face-neutral reports of
``dsh.agent.context_report`` and ``dsh.agent.billing`` for the controller's open session, both
kept current by the controller's ``ContextFold`` (each costs what was appended since the last)."""

from __future__ import annotations

from dsh.agent.billing import render_cost
from dsh.agent.context_report import context_report, render_context, session_cost_report
from dsh.agent.spend import spend_of, spend_text
from dsh.tui.controller import Controller

NOTHING_SENT = "Nothing sent yet: the first prompt starts the session."


def context_text(controller: Controller) -> str:
    """What the model sees in the next request, part by part, and the cache hits so far."""
    session = controller.session
    if session is None:
        return NOTHING_SENT
    agent = controller.agent
    header = agent.current_header() if agent is not None else None
    report = context_report(
        session, window=controller.window, header=header, fold=controller.context
    )
    return render_context(report)


def cost_text(controller: Controller) -> str:
    """The billed tokens per provider:model and a list-price estimate."""
    session = controller.session
    if session is None:
        return NOTHING_SENT
    return render_cost(session_cost_report(session, fold=controller.context))


def spend_line(controller: Controller) -> str | None:
    """The status bar's spend: ``/cost``'s estimated total and billed tokens, in a few words
    (None before any call reported usage)."""
    session = controller.session
    if session is None:
        return None
    return spend_text(spend_of(session_cost_report(session, fold=controller.context)))
