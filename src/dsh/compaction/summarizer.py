"""The summariser seam: what a backend asks for, and what comes back.

A backend describes each checkpoint it needs as a ``SummaryTask``; a ``Summarizer`` answers it.
``ModelSummarizer`` (``dsh.compaction.model_summarizer``) makes one model call per task;
``ExtractiveSummarizer`` (``dsh.compaction.extractive``) writes the text with code, keyless and
deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from dsh.events import Message, Usage

TaskKind = Literal["summary", "stub", "state", "pass"]
"""``summary``: the basic backend's one checkpoint; ``stub``/``state``: the recallable pair;
``pass``: every stub and the state of one recallable pass in one call (``parts``), riding or
compact."""

Layout = Literal["compact", "riding"]
"""How a model call for a stub, state or pass task is laid out. ``riding``: the conversation
request as sent (system, tools, every surface message) plus one instruction naming the slice, so
every call of a pass extends the conversation's cached prefix (the summariser is the
conversation's own route). ``compact``: a fixed summariser system prompt and no tools, the shared
pass context, then the slice as transcript text (a different summariser model, or a conversation
too large for the summariser's window)."""


@dataclass(frozen=True, slots=True)
class SummaryTask:
    kind: TaskKind
    messages: tuple[Message, ...]
    """The slice to summarise, in surface order."""
    max_tokens: int
    """Budget for the text (heuristic tokens)."""
    system: str | None = None
    """The conversation's system prompt (model summarisers reuse it so the call is a prefix)."""
    tools: tuple[dict[str, Any], ...] = ()
    """The conversation's tool specs (same reason)."""
    previous: str | None = None
    """Text of the checkpoint this one supersedes, to merge (not copy): the basic backend's
    previous summary, or the recallable backend's previous state."""
    background: str | None = None
    """Stub tasks: the pass-start state, given as background only, never summarised."""
    keyword_lines: tuple[str, ...] = ()
    """Stub tasks: the keyword lines of all committed stubs (what is already indexed)."""
    recent_stubs: tuple[str, ...] = ()
    """Stub tasks: the one or two most recent committed stubs."""
    focus: str | None = None
    """Manual ``/compact focus``: what the person wants kept."""
    corpus: tuple[str, ...] = ()
    """Rendered text of the whole session, for ranking how rare a literal is (when ``rarity``
    is not given)."""
    rarity: Callable[[str], int] | None = None
    """How often a literal occurs in the session (an incremental index kept by the backend);
    preferred over ``corpus`` so a stub costs O(its slice), not O(the log)."""
    layout: Layout = "compact"
    conversation: tuple[Message, ...] = ()
    """``riding`` layout: the conversation's messages exactly as the next request sends them."""
    slice_range: tuple[int, int] | None = None
    """1-based positions of the first and last message to index (a stub) or to fold into the
    state: in ``conversation`` (riding), or in the call of a compact ``pass`` (its context
    message counting as #1)."""
    output_limit: int | None = None
    """Most output tokens the call may ask for (the room a riding call leaves in the window);
    None: ``max_tokens`` times the usual slack."""
    previous_at: int | None = None
    """A state part: 1-based position of the previous state — its checkpoint in
    ``conversation`` (riding), or the context message of a compact ``pass`` (#1)."""
    parts: tuple[SummaryTask, ...] = ()
    """``pass`` tasks: the pass's stub tasks, then its state task (all of one layout), answered
    in one call as labelled sections (``dsh.compaction.prompts.pass_labels``)."""


@dataclass(frozen=True, slots=True)
class SummaryOutput:
    text: str
    provider: str
    model: str
    usage: Usage | None = None
    raw_output: str | None = None
    """The model's raw text when exactly one model call produced it (replay serves it again)."""
    truncated: bool = False


class Summarizer(Protocol):
    name: str
    model: str

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        """Answer one task; raise ``dsh.errors.ProviderError`` (or return empty text) on failure."""
        ...


def reads_rarity(summarizer: Summarizer) -> bool:
    """Whether ``summarizer``'s answers read a task's ``rarity`` counts (code that ranks
    literals, like the extractive summariser). A summariser says it does not with a false
    ``reads_rarity`` attribute (a model call); unless it says so, assume it does."""
    return bool(getattr(summarizer, "reads_rarity", True))


def output_bound(summarizer: Summarizer) -> int | None:
    """The most output tokens one call of ``summarizer`` may ask for (its route's
    ``max_output_tokens``), or None when it has no such bound (code, an unknown model)."""
    bound = getattr(summarizer, "max_output_tokens", None)
    return bound if isinstance(bound, int) and bound > 0 else None


def call_window(summarizer: Summarizer, window: int | None) -> int | None:
    """The window one call of ``summarizer`` must fit: its model's own (``context_window``)
    when that is smaller than the conversation's ``window``."""
    own = getattr(summarizer, "context_window", None)
    if not isinstance(own, int) or own <= 0:
        return window
    return own if window is None else min(own, window)


def within_bound(budget: int, summarizer: Summarizer) -> int:
    """A region's token budget (``stub_tokens``, ``state_max_tokens``) capped at what one call
    of ``summarizer`` may write: asked for more, a model is cut off (a failed call) or the
    server refuses the request."""
    bound = output_bound(summarizer)
    return budget if bound is None else min(budget, bound)


class CountedSummarizer:
    """``inner`` that reports each finished call to ``on_call`` (a face's progress line); every
    other attribute (``route``, ``max_output_tokens``, ``reads_rarity``) is ``inner``'s, so the
    backend plans a counted summariser exactly as the one it wraps."""

    def __init__(self, inner: Summarizer, on_call: Callable[[], None]) -> None:
        self.inner = inner
        self.on_call = on_call
        self.name = inner.name
        self.model = inner.model

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy in the making): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        try:
            return await self.inner.summarize(task)
        finally:
            self.on_call()
