"""``dsh recall search|read``: the recall tools from the command line (never blocks; writes
nothing but the session's span file, the cache a search shares with the agent's searches).

They print the text the model would get from ``history_search`` / ``history_read`` on the same
log, except that hints naming the model's tool name the command to type instead (``dsh recall
read ID c42 --offset 1``). A search is bounded as the model's is (``recall.search_limit`` hits
within ``recall.read_budget_chars``); ``--limit N`` shows the first N (1-200), ``--limit 0``
every hit, and a search that left hits out ends with one line saying how many and the command
that shows them all. A typed recall error prints ``dsh: error: CODE: message`` and exits 1,
except a ``--checkpoint`` that names none: the search of every checkpoint the model gets with its
``CHECKPOINT_NOT_FOUND`` is printed, after a ``dsh: warning:`` line that says so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

import click

from dsh.cli import context
from dsh.config import Settings, dsh_home
from dsh.errors import DshError
from dsh.recall import (
    INVALID_ARGUMENT,
    READ_A_MATCH,
    SEARCHED_INSTEAD,
    RecallError,
    SearchAnswer,
    SearchedEverywhere,
    SpanCache,
    read_checkpoint,
    search_answer,
)
from dsh.recall.tool_specs import MAX_SEARCH_LIMIT, MIN_SEARCH_LIMIT
from dsh.store import span_cache_path
from dsh.surface import Session
from dsh.tools.base import ToolOutput
from dsh.tools.terminal_text import printable_text


class RecallCommandError(DshError):
    """A recall error on the CLI: ``CODE: message`` (exit status 1)."""


@click.group("recall", cls=context.DshGroup)
def recall() -> None:
    """Search and read compacted history, as the model's recall tools do."""


@recall.command("search")
@click.argument("session_id")
@click.argument("query")
@click.option("--checkpoint", default=None, help="Search only this checkpoint (e.g. c123).")
@click.option(
    "--limit",
    type=int,
    default=None,
    help="Show the first N matches (1-200), or 0 for every match. Default: as the model's "
    "answer, recall.search_limit within recall.read_budget_chars.",
)
def search(session_id: str, query: str, checkpoint: str | None, limit: int | None) -> None:
    """Literal, case-insensitive search of every compacted span of a session (by its words, in
    any order and word form, when nothing matches literally)."""
    cfg = context.settings()
    if limit is not None and not (limit == 0 or MIN_SEARCH_LIMIT <= limit <= MAX_SEARCH_LIMIT):
        raise RecallCommandError(
            f"{INVALID_ARGUMENT}: --limit must be 0 (every match) or from {MIN_SEARCH_LIMIT} to "
            f"{MAX_SEARCH_LIMIT}, got {limit}"
        )
    # by default the model's answer and its bound; a count asked for is shown whole
    budget = cfg.recall.read_budget_chars if limit is None else None
    asked = SearchAsked(query, checkpoint)
    _answer(
        cfg,
        session_id,
        lambda session: search_answer(
            session.events,
            query,
            checkpoint=checkpoint,
            limit=limit or cfg.recall.search_limit,
            cache=_span_cache(session),
            index=session,
            budget_chars=budget,
            every=limit == 0,
        ),
        asked.hints,
    )


@recall.command("read")
@click.argument("session_id")
@click.argument("checkpoint")
@click.option("--offset", type=int, default=0, show_default=True, help="First message index.")
def read(session_id: str, checkpoint: str, offset: int) -> None:
    """Print one page of the messages a checkpoint shadows (follow the cursor with --offset)."""
    cfg = context.settings()
    budget = cfg.recall.read_budget_chars
    _answer(
        cfg,
        session_id,
        lambda session: read_checkpoint(
            session.events, checkpoint, offset, budget_chars=budget, index=session
        ),
        _read_hint,
    )


def _span_cache(session: Session) -> SpanCache:
    """A cache backed by the session's span file: the lower-cased spans an earlier search (here
    or in the agent) stored are read, not rendered again."""
    cache = SpanCache()
    cache.use_file(span_cache_path(dsh_home(), session.id))
    return cache


Answer = ToolOutput | SearchAnswer
Hints = Callable[[SearchAnswer, str, bool], str]
"""The text to print for a tool's answer, given the (resolved) session id and whether a
search was widened to every checkpoint."""

_CURSOR = re.compile(
    r"\[Continuation cursor: offset=(\d+) — call history_read with this offset for more\]$"
)
_READ_PLAUSIBLE = re.compile(r'history_read with checkpoint "(c\d+)"')


def _read_hint(answer: SearchAnswer, session_id: str, everywhere: bool) -> str:
    output = answer.output
    meta = output.meta or {}
    return _CURSOR.sub(
        lambda m: (
            f"[Continuation cursor: offset={m[1]} — run `dsh recall read {session_id} "
            f"{meta.get('checkpoint', 'CHECKPOINT')} --offset {m[1]}` for more]"
        ),
        output.text,
    )


_TOOL_ADVICE = (
    ("pass one of those checkpoints", "pass one of those with --checkpoint"),
    ("pass a checkpoint", "pass --checkpoint"),
    ("raise limit", "raise --limit"),
)
"""The model's words for its arguments in a search's header, and a person's for the flags."""


@dataclass(frozen=True, slots=True)
class SearchAsked:
    """What ``dsh recall search`` was asked: how its answer's hints name the flags, and the
    command that shows the hits the answer left out."""

    query: str
    checkpoint: str | None

    def hints(self, answer: SearchAnswer, session_id: str, everywhere: bool) -> str:
        header, gap, rest = answer.output.text.partition("\n\n")
        # the advice after the query in the header: never the query's or a hit's own text
        quoted = repr(self.query)
        after = header.find(quoted) + len(quoted) if quoted in header else 0
        advice = header[after:]
        for model_words, flag_words in _TOOL_ADVICE:
            advice = advice.replace(model_words, flag_words)
        text = (header[:after] + advice + gap + rest).replace(
            READ_A_MATCH,
            f"Read a match in context with `dsh recall read {session_id} CHECKPOINT --offset N` "
            "(N = the #msg number).",
        )
        text = _READ_PLAUSIBLE.sub(lambda m: f"`dsh recall read {session_id} {m[1]}`", text)
        if not answer.unshown:
            return text
        flags = ["--limit", "0"]
        if self.checkpoint is not None and not everywhere:
            flags = ["--checkpoint", self.checkpoint, *flags]
        arguments = [session_id, self.query]
        if self.query.startswith("-"):  # not to be read as an option
            arguments = [*flags, "--", *arguments]
        else:
            arguments += flags
        return (
            f"{text}\n\n{answer.unshown} more match(es) not shown: "
            f"`{shlex.join(['dsh', 'recall', 'search', *arguments])}` prints every one."
        )


def _answer(
    cfg: Settings, session_id: str, work: Callable[[Session], Answer], hints: Hints
) -> None:
    store = context.store(cfg)
    everywhere = False
    with Session.open(store, context.resolve_session_id(store, session_id)) as session:
        for warning in session.warnings:
            context.warn(warning)
        try:
            answer = work(session)
        except SearchedEverywhere as exc:  # the model's answer, split: a note, then the search
            context.warn(f"{exc.code}: {exc.why}; {SEARCHED_INSTEAD.removesuffix('.')}")
            answer, everywhere = exc.answer, True
        except RecallError as exc:
            raise RecallCommandError(f"{exc.code}: {exc.message}") from exc
    text = hints(
        answer if isinstance(answer, SearchAnswer) else SearchAnswer(answer), session.id, everywhere
    )
    click.echo(printable_text(text))  # a log's text, never to act
