"""Room in the context window: for a prompt, and for a conversation beside the fixed part.

Every request carries a fixed part — the system prompt and the tool schemas, as sent once the
recall tools are offered (from the first checkpoint on) — and compaction never shortens the
prompt a turn answers (``dsh.compaction.open_prompt``). So two things are refused before
anything is logged, each in one line, the same in every face (they all run turns through
``dsh.agent.loop.Agent``, which checks, and start them through ``SessionRunner.start_turn``):

- ``prompt_problem``: a prompt longer than ``MAX_PROMPT_CHARS`` (one limit, whatever the
  window), or one the window cannot hold — with the files its ``@path`` mentions attach — beside
  the fixed part and the reply bound the request asks for (``max_tokens``): sent, it could only
  be refused by the server or cut by one that truncates, and no compaction could help. The
  attachments are read once, before the turn starts, and the turn sends what was counted.
  ``dsh run`` exits non-zero with the line, the terminal UI keeps the prompt in its composer,
  the web answers 413 and the page keeps it.
- ``window_problem``: a window in which the fixed part, the state checkpoint's cap and the
  retained tail reach the compaction threshold: no pass could bring a request below it, so
  every step would compact again and still be above it (a 2,048-token window, where dsh's own
  system prompt and tools take about 1.7k of its 1,638-token threshold). Refused where the
  agent is built, at start, in every face. Budgets that reach the threshold on their own are
  ``dsh.config.rules.misfit``'s to say (a configured window is refused there, a reported one
  is said). ``MIN_CONTEXT_WINDOW`` is this rule applied to dsh's own fixed part, so config
  validation and a reopen's check of a recorded window follow it too.

Sizes are dsh's heuristic (``dsh.surface.tokens``, about four characters a token), calibrated
by the server's count of the session's last request when it reported one
(``dsh.surface.calibration``): a server's tokenizer may count more (text that is not English,
JSON, code), so before any count, or for a prompt unlike what came before it, a prompt near the
bound may still be refused by the server; the turn then ends with the server's error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dsh.agent.mentions import Attachment
from dsh.config import CompactionSettings
from dsh.events import RequestHeaderBody
from dsh.surface import system_tokens, text_tokens, tools_tokens

MAX_PROMPT_CHARS = 200_000
"""The longest prompt any face takes (about 50k tokens): a paste that long is a file, better
attached with ``@path`` (its note is bounded by the window), whatever the window holds."""


def fixed_tokens(header: RequestHeaderBody) -> int:
    """The system prompt and tool schemas of ``header``, priced as every request prices them."""
    return system_tokens(header.system) + tools_tokens(header.tools)


def prompt_problem(
    prompt: str,
    *,
    fixed: int,
    window: int,
    reply: int,
    attach: bool = True,
    attached: Sequence[Attachment] = (),
    scale: Callable[[int], int] = lambda tokens: tokens,
) -> str | None:
    """Why ``prompt`` cannot be sent (None: it can): over ``MAX_PROMPT_CHARS``, or more than
    ``window`` leaves beside the ``fixed`` part and the ``reply`` bound, counting the notes its
    ``@path`` mentions ``attached`` (``dsh.agent.mentions``: a quarter of the window at most,
    so a short prompt naming a big file can still be too much for a small window or a large
    reply bound). ``attach``: whether ``@path`` attaches a file (``tools.attach_mentions``),
    which the advice then names. ``scale``: heuristic tokens as the server counts them (the
    session's calibration, ``Measurement.scale``), applied to the fixed part, the prompt and
    each attachment alike."""
    too_long = length_problem(prompt, attach=attach)
    if too_long is not None:
        return too_long
    sizes = [(a.path, scale(text_tokens(a.text))) for a in attached]
    tokens = scale(text_tokens(prompt)) + sum(size for _, size in sizes)
    room = window - scale(fixed) - reply
    if tokens <= room:
        return None
    if not sizes:
        what, advice = f"the prompt is ~{_short(tokens)} tokens", _advice(attach)
    else:
        what = f"the prompt and what it attaches ({_largest(sizes)}) are ~{_short(tokens)} tokens"
        advice = "shorten it or mention fewer or smaller files"
    return (
        f"{what}; the {window:,}-token context window leaves ~{_short(max(room, 0))} for "
        f"{'them' if sizes else 'it'} beside the system prompt, tools and reply: {advice}"
    )


def length_problem(prompt: str, *, attach: bool = True) -> str | None:
    """Why ``prompt`` is longer than any face takes (None: it is not); what a face that has no
    agent yet can check on its own, in the words ``prompt_problem`` uses."""
    if len(prompt) <= MAX_PROMPT_CHARS:
        return None
    return (
        f"the prompt is {len(prompt):,} characters; dsh takes at most {MAX_PROMPT_CHARS:,}: "
        f"{_advice(attach)}"
    )


def _advice(attach: bool) -> str:
    return "shorten it or attach the file with @path" if attach else "shorten it"


def window_problem(*, fixed: int, window: int, budgets: CompactionSettings) -> str | None:
    """Why ``window`` leaves no room for a conversation beside the ``fixed`` part (None: it
    does): the fixed part, the state's cap and the retained tail reach the threshold."""
    threshold = int(window * budgets.threshold_ratio)
    state = budgets.for_window(window).state_max
    tail = budgets.retain_for(window)
    if state + tail >= threshold or fixed + state + tail < threshold:
        return None  # the budgets alone are misfit's to say; or there is room
    return (
        f"the system prompt and tools take ~{fixed:,} tokens, too many for a {window:,}-token "
        f"context window: with the state ({state:,}) and the recent tail ({tail:,}) they must "
        f"stay below the compaction threshold ({threshold:,}); give a larger window, or fewer "
        "tools or a shorter AGENTS.md"
    )


def _largest(sizes: Sequence[tuple[str, int]], shown: int = 3) -> str:
    """The largest ``shown`` attachments with their sizes, largest first, and how many more."""
    ranked = sorted(sizes, key=lambda named: -named[1])
    said = ", ".join(f"@{path} ~{_short(size)}" for path, size in ranked[:shown])
    return said if len(ranked) <= shown else f"{said} and {len(ranked) - shown} more"


def _short(tokens: int) -> str:
    """``tokens`` as people read a size: 930, 5.3k, 59k."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 10_000:
        return f"{tokens / 1000:.1f}".removesuffix(".0") + "k"
    return f"{round(tokens / 1000)}k"
