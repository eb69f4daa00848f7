"""What ``history_search`` answers with: the hits of a literal scan, as many as the answer's
bound holds (``dsh.recall.snippets.Bound``), and the answer's text, which says truthfully how
many were shown of how many matched and where the others are."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh.events import Event
from dsh.recall.checkpoints import Checkpoint
from dsh.recall.render import SpanCache
from dsh.recall.snippets import Bound, snippet
from dsh.recall.tool_specs import READ_A_MATCH
from dsh.recall.word_search import WordHit


@dataclass(frozen=True, slots=True)
class Found:
    hits: list[str]
    matched: int
    checkpoints: int
    full: bool = False
    """Hits were left out because the answer's size bound was reached (not ``limit``)."""
    unshown: dict[str, int] = field(default_factory=dict)
    """Per checkpoint id, in log order: how many of its hits are not shown."""

    @property
    def truncated(self) -> bool:
        return self.matched > len(self.hits)


def scan(
    events: Sequence[Event],
    targets: Sequence[Checkpoint],
    query: str,
    bound: Bound,
    spans: SpanCache,
) -> Found:
    """One snippet per matching message of ``targets``, within ``bound``, in log order."""
    needle = query.lower()
    hits: list[str] = []
    unshown: dict[str, int] = {}
    matched = checkpoints = used = 0
    full = False
    for target in targets:
        found_here = False
        for index, position in spans.matches(events, target, needle):
            matched += 1
            found_here = True
            if len(hits) < bound.limit and not full:
                message = spans.message(events, target, index)
                hit = f"[{target.id} #msg {index}] {snippet(message, position, len(needle))}"
                if bound.room is None or not hits or used + len(hit) + 1 <= bound.room:
                    hits.append(hit)
                    used += len(hit) + 1
                    continue
                full = True
            unshown[target.id] = unshown.get(target.id, 0) + 1
        checkpoints += found_here
    return Found(hits, matched, checkpoints, full, unshown)


def hits_text(header: str, found: Found) -> str:
    if found.full:
        header += (
            f" Showing the first {len(found.hits)} of {found.matched}, as many as fit in one "
            f"answer; the other {found.matched - len(found.hits)} are in "
            f"{_where(found.unshown)}: pass one of those checkpoints or use a more specific "
            "query to see them."
        )
    elif found.truncated:
        header += (
            f" Showing the first {len(found.hits)}; use a more specific query, pass a checkpoint, "
            "or raise limit to see more."
        )
    return "\n\n".join([header, "\n".join(found.hits), READ_A_MATCH])


def _where(unshown: dict[str, int], most: int = 8) -> str:
    """``c12 (3), c40 (17)``: the checkpoints holding hits not shown, the first ``most``."""
    named = [f"{cid} ({count})" for cid, count in list(unshown.items())[:most]]
    more = len(unshown) - len(named)
    return ", ".join(named) + (f" and {more} more checkpoint(s)" if more > 0 else "")


def word_hits_text(
    header: str,
    terms: Sequence[str],
    total: int,
    hits: Sequence[tuple[WordHit, str, tuple[int, int]]],
    lines: Sequence[str],
) -> str:
    """The answer when no message holds the query literally but ``total`` hold enough of its
    words (``terms``); ``hits``: the best ones up to the limit, each with its message and where
    its snippet is centred (``locate``); ``lines``: the first of them, as many as fit."""
    whole = sum(len(hit.held) == len(terms) for hit, _, _ in hits[: len(lines)])
    header += (
        " The literal scan found nothing, so the query's words were looked for on their own "
        f"(any order, any word form, stop words dropped): {total} message(s) hold at least half "
        f"of its {len(terms)} word(s); best first."
    )
    if len(lines) < len(hits):
        header += (
            f" Showing the best {len(lines)} ({whole} holding all), as many as fit in one "
            "answer; use fewer or rarer words to see others."
        )
    elif total > len(hits):
        header += f" Showing the first {len(hits)} ({whole} holding all); raise limit to see more."
    return "\n\n".join([header, "\n".join(lines), READ_A_MATCH])
