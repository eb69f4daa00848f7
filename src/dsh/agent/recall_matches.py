"""Compacted messages that match a prompt's words, given to the model with the prompt.

Small local models do not search their compacted history when they should: in 210 trials a
real 1.5B model, asked about a fact only a checkpoint's originals held, called
``history_search`` in none unasked (docs/local-models.md). So, once the log holds a checkpoint,
dsh runs the recall tools' search by words (``dsh.recall.word_search``) on the prompt itself
and, when some compacted original holds most of its rarer words, follows the prompt with one
note (``RECALL_PLUGIN``: ``Context from recall`` in the transcript, collapsed like an
attachment) of at most ``MAX_MATCHES`` snippets, each tagged ``[c<id> #msg <n>]`` as
``history_search`` tags them, so the model can read one whole with ``history_read``.

A compacted message is a match when it holds the rarest of the prompt's words that compacted
messages hold, and at least ``COVERAGE`` of those words weighed by their rarity (BM25's inverse
document frequency; a question's own words no message holds do not count); when those words
are not common (their mean rarity at least that of a word one message in ``COMMON_SHARE``
holds, or two messages in a short history); when, a user-role message, more than
``NEW_SHARE`` of its own words are not the prompt's (an earlier prompt in the same words is an
instruction repeated, not a fact); when it is an original (not a checkpoint's text copied into
a later span, nor an earlier such note); and when no note since the latest checkpoint showed
it already. The note takes at most ``MAX_NOTE_CHARS`` characters, and no more characters than
an eighth of the window has tokens; it is left out rather than make a prompt too large
(``dsh.agent.room``). The search is a pure function of the log (no model call); it runs in the
thread that reads the prompt's ``@path`` attachments, once per turn, and is what the turn sends
and logs.

``recall.attach_matches`` turns it on or off; unset, it is on where replies are read for tool
calls written as text (``provider.text_tool_calls``' default: openai-compatible servers), and
only with the recall tools offered (the ``recallable`` backend).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dsh.agent.mentions import Attachment, read_attachments
from dsh.config import DEFAULT_CONTEXT_WINDOW
from dsh.errors import PromptTooLarge
from dsh.events import (
    RECALL_PLUGIN,
    CompactionSummaryEvent,
    Event,
    EventsByType,
    PluginSource,
    UserMessageEvent,
)
from dsh.recall import HISTORY_SEARCH, SpanCache, list_checkpoints
from dsh.recall.snippets import snippet
from dsh.recall.tool_specs import MAX_QUERY_CHARS
from dsh.recall.word_search import WordHit, locate, query_terms, search_words

if TYPE_CHECKING:
    from dsh.agent.loop import Agent

MAX_MATCHES = 3
MAX_NOTE_CHARS = 1200
CANDIDATES = 20
"""How many of the best hits by words are looked at for ``MAX_MATCHES`` that qualify."""
PROMPT_LABEL = "User: "
"""How a span renders a user-role message: a prompt (or a note dsh added after one)."""
NEW_SHARE = 1 / 3
"""More than this share of a user-role match's own words must not be the prompt's: an earlier
prompt in mostly the same words ("run the tests for parser …" for "… for validation …") is an
instruction repeated, not a fact ("the staging service listens on port 8443; remember it" for
"which port does the staging service listen on?" is half new)."""
COVERAGE = 2 / 3
"""The share of a prompt's words, each weighed by its rarity, a match must hold."""
COMMON_SHARE = 10
"""Words that more than one message in this many hold say little about what is wanted."""

HEADING = (
    "[recalled] Compacted history (not on your context) holds messages with most of this "
    "prompt's words, found by dsh; read one whole with history_read (checkpoint id, offset = "
    "the #msg number) if it matters:"
)


def common_floor(messages: int) -> float:
    """The least mean inverse document frequency (BM25's, as the search ranks by) of the words
    a match holds: that of a word held by one message in ``COMMON_SHARE`` of ``messages``, or by
    two (a fact and the reply that repeats it) in a short history."""
    holding = max(2, math.ceil(messages / COMMON_SHARE))
    return math.log(1 + (messages - holding + 0.5) / (holding + 0.5))


def prompt_notes(agent: Agent, prompt: str) -> tuple[Attachment, ...]:
    """What follows ``prompt`` in ``agent``'s next turn: what its ``@path`` mentions attach,
    when that is on (``dsh.agent.mentions``), then the note of compacted messages matching it."""
    window = agent.config.context_window or DEFAULT_CONTEXT_WINDOW
    attached: tuple[Attachment, ...] = ()
    if agent.config.attach_mentions:
        secrets = agent.tools.secrets
        attached = read_attachments(prompt, agent.workspace, secrets, context_window=window)
    return attached + recall_matches(agent, prompt, attached)


def recall_matches(
    agent: Agent, prompt: str, attached: Sequence[Attachment]
) -> tuple[Attachment, ...]:
    """The note of compacted messages matching ``prompt`` for ``agent``'s next turn (none when
    off, with nothing compacted, nothing matching, or no room beside ``attached``); blocking
    reads of the span cache, run it in a thread."""
    tool = agent.tools.get(HISTORY_SEARCH)
    cache = getattr(tool, "cache", None)
    if not agent.config.attach_matches or not isinstance(cache, SpanCache):
        return ()
    session = agent.session
    span_dir = getattr(tool, "span_dir", None)
    with cache.lock:
        if span_dir is not None:
            cache.use_file(span_dir / f"{session.id}.spans")
        try:
            text = matches_text(
                session.events,
                prompt,
                cache=cache,
                index=session,
                window=agent.config.context_window or DEFAULT_CONTEXT_WINDOW,
            )
        finally:
            cache.flush()
    if text is None:
        return ()
    note = Attachment("compacted history", agent.tools.secrets.mask(text), plugin=RECALL_PLUGIN)
    try:
        agent.check_prompt(prompt, (*attached, note))
    except PromptTooLarge:
        return ()  # the prompt goes without it rather than be refused for it
    return (note,)


def matches_text(
    events: Sequence[Event],
    prompt: str,
    *,
    cache: SpanCache,
    index: EventsByType | None = None,
    window: int,
) -> str | None:
    """The note's text for ``prompt`` over the log ``events`` (None: no match, or nothing
    compacted); see the module docstring for what matches."""
    terms = query_terms(prompt[:MAX_QUERY_CHARS])
    targets = list_checkpoints(events, index)
    if not terms or not targets:
        return None
    words = search_words(events, targets, terms, cache)
    floor = common_floor(words.messages)
    weight = {term: words.rarity.get(term, 0.0) for term in terms}
    need = COVERAGE * sum(weight.values())
    rarest = max(words.rarity, key=lambda term: words.rarity[term], default=None)
    shown = _shown_since_checkpoint(events, index)
    room = min(MAX_NOTE_CHARS, window // 8) - len(HEADING)
    lines: list[str] = []
    for hit in words.best(CANDIDATES):
        if rarest not in hit.held or sum(weight[term] for term in hit.held) < need:
            continue
        line = _line(events, hit, cache, terms) if _qualifies(hit, floor) else None
        if line is None or line.split("]", 1)[0] + "]" in shown:
            continue
        if lines and sum(len(kept) + 1 for kept in lines) + len(line) + 1 > room:
            break
        lines.append(line)
        if len(lines) == MAX_MATCHES:
            break
    return "\n".join([HEADING, *lines]) if lines else None


def _qualifies(hit: WordHit, floor: float) -> bool:
    """An original (not a checkpoint's text copied into a later span) whose words are rare."""
    return not hit.copy and hit.score / len(hit.held) >= floor


def _echoes(message: str, prompt_terms: Sequence[str]) -> bool:
    """Whether ``message`` is a user-role message at most ``NEW_SHARE`` of whose words (its
    label aside) are not ``prompt_terms``."""
    if not message.startswith(PROMPT_LABEL):
        return False  # a reply in the question's words is its answer
    own = query_terms(message.removeprefix(PROMPT_LABEL))
    return not own or len(set(own) - set(prompt_terms)) <= NEW_SHARE * len(own)


def _line(
    events: Sequence[Event], hit: WordHit, cache: SpanCache, prompt_terms: Sequence[str]
) -> str | None:
    message = cache.message(events, hit.checkpoint, hit.index)
    if HEADING in message or _echoes(message, prompt_terms):
        return None  # an earlier note of this kind, or an earlier prompt like this one
    return f"[{hit.checkpoint.id} #msg {hit.index}] {snippet(message, *locate(events, hit, cache))}"


def _shown_since_checkpoint(events: Sequence[Event], index: EventsByType | None) -> str:
    """The text of this kind's notes logged since the latest checkpoint (still on the
    surface): a match one of them tags is not shown again."""
    if index is not None:
        summaries: Sequence[CompactionSummaryEvent] = index.of_type(CompactionSummaryEvent)
        messages: Sequence[UserMessageEvent] = index.of_type(UserMessageEvent)
    else:
        summaries = [e for e in events if isinstance(e, CompactionSummaryEvent)]
        messages = [e for e in events if isinstance(e, UserMessageEvent)]
    since = summaries[-1].seq if summaries else -1
    notes = []
    for event in reversed(messages):
        if event.seq <= since:
            break
        source = event.data.source
        if isinstance(source, PluginSource) and source.plugin == RECALL_PLUGIN:
            notes.append("".join(getattr(block, "text", "") for block in event.data.content))
    return "\n".join(notes)
