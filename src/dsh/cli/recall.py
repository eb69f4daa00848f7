"""``dsh recall search|read``: the recall tools from the command line (never blocks; writes
nothing but the session's span file, the cache a search shares with the agent's searches).

They print the text the model would get from ``history_search`` / ``history_read`` on the same
log, except that hints naming the model's tool name the command to type instead (``dsh recall
read ID c42 --offset 1``). A typed recall error prints ``dsh: error: CODE: message`` and exits 1,
except a ``--checkpoint`` that names none: the search of every checkpoint the model gets with its
``CHECKPOINT_NOT_FOUND`` is printed, after a ``dsh: warning:`` line that says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import click

from dsh.cli import context
from dsh.config import Settings, dsh_home
from dsh.errors import DshError
from dsh.recall import (
    READ_A_MATCH,
    SEARCHED_INSTEAD,
    RecallError,
    SearchedEverywhere,
    SpanCache,
    read_checkpoint,
    search_history,
)
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
@click.option("--limit", type=int, default=None, help="Maximum snippets (default: recall config).")
def search(session_id: str, query: str, checkpoint: str | None, limit: int | None) -> None:
    """Literal, case-insensitive search of every compacted span of a session (by its words, in
    any order and word form, when nothing matches literally)."""
    cfg = context.settings()
    chosen = cfg.recall.search_limit if limit is None else limit
    _answer(
        cfg,
        session_id,
        lambda session: search_history(
            session.events,
            query,
            checkpoint=checkpoint,
            limit=chosen,
            cache=_span_cache(session),
            index=session,
        ),
        _search_hints,
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


Hints = Callable[[ToolOutput, str], str]
"""The text to print for a tool's output, given the (resolved) session id."""

_CURSOR = re.compile(
    r"\[Continuation cursor: offset=(\d+) — call history_read with this offset for more\]$"
)
_READ_PLAUSIBLE = re.compile(r'history_read with checkpoint "(c\d+)"')


def _read_hint(output: ToolOutput, session_id: str) -> str:
    meta = output.meta or {}
    return _CURSOR.sub(
        lambda m: (
            f"[Continuation cursor: offset={m[1]} — run `dsh recall read {session_id} "
            f"{meta.get('checkpoint', 'CHECKPOINT')} --offset {m[1]}` for more]"
        ),
        output.text,
    )


def _search_hints(output: ToolOutput, session_id: str) -> str:
    text = output.text.replace(
        READ_A_MATCH,
        f"Read a match in context with `dsh recall read {session_id} CHECKPOINT --offset N` "
        "(N = the #msg number).",
    )
    return _READ_PLAUSIBLE.sub(lambda m: f"`dsh recall read {session_id} {m[1]}`", text)


def _answer(
    cfg: Settings, session_id: str, work: Callable[[Session], ToolOutput], hints: Hints
) -> None:
    store = context.store(cfg)
    with Session.open(store, context.resolve_session_id(store, session_id)) as session:
        for warning in session.warnings:
            context.warn(warning)
        try:
            output = work(session)
        except SearchedEverywhere as exc:  # the model's answer, split: a note, then the search
            context.warn(f"{exc.code}: {exc.why}; {SEARCHED_INSTEAD.removesuffix('.')}")
            output = exc.found
        except RecallError as exc:
            raise RecallCommandError(f"{exc.code}: {exc.message}") from exc
    click.echo(printable_text(hints(output, session.id)))  # a log's text, never to act
