"""At most ``tools.max_calls_per_reply`` of one reply's tool calls run (``calls_to_run``).

A server that ignores ``max_tokens``, or a small model caught in a loop, can send one reply
asking for hundreds of calls, and under ``--yes`` every one of them would run. The first
``limit`` calls run as any others do (approval, order, repeat notes); each call past them is
logged (``tool/call``, marked ``overLimit``) with the others and answered, after the calls
that ran, with a ``TOO_MANY_CALLS`` error result (``over_limit_result``) telling the model
plainly that it was not run, why, and to ask for fewer at a time, so every call has its result
for every provider. Such a call never reaches the tool registry: it is never offered for
approval. The person is told once per such reply, in one warning (``over_limit_warning``: a
toast and ``/warnings`` in the terminal UI, the web's warning list, a ``dsh: warning:`` line
from ``dsh run``), and sees those calls as one card in every transcript
(``dsh.transcript.call_fold``). A limit of 0 runs every call.

Calls a reply carries but that are not run for another reason (a reply cut at the output limit,
stopped by a filter, cancelled) are answered as before and do not meet this limit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from dsh.events import ToolCallBlock
from dsh.tools.base import ToolOutput

log = logging.getLogger("dsh.agent")

TOO_MANY_CALLS = "TOO_MANY_CALLS"
"""The error code of a call's result when its reply asked for more calls than the limit."""


def calls_to_run(calls: Sequence[ToolCallBlock], limit: int) -> int:
    """How many of a reply's ``calls`` run (the first ones); ``limit`` 0: all of them."""
    return len(calls) if limit <= 0 else min(len(calls), limit)


def over_limit_result(asked: int, limit: int) -> ToolOutput:
    """The result of a call the limit kept from running, for the model to read: short, as a
    runaway reply gets hundreds (268 of 300 calls: about 36,000 characters)."""
    text = (
        f"[{TOO_MANY_CALLS}] not run: your reply asked for {asked} tool calls and at most "
        f"{limit} run per reply (the first {limit} ran). Ask for fewer at a time."
    )
    return ToolOutput(text, is_error=True, code=TOO_MANY_CALLS)


def over_limit_warning(asked: int, limit: int) -> None:
    """Tell the person, once for the reply, that ``asked - limit`` of its calls did not run."""
    log.warning(
        "the model's reply asked for %d tool calls: the first %d ran, the other %d were not run "
        "(tools.max_calls_per_reply = %d)",
        asked,
        limit,
        asked - limit,
        limit,
    )
