"""The model calls of recorded compaction passes, in the order a replay asks for them again.

A pass logs one ``compaction/summary`` per checkpoint, left to right, but not its calls: a
call that failed (or whose answer was refused) left only a pointer stub (``degraded:
"fallback"``), a pass answered in one call put that call's answer on its first checkpoint and
wrote the others from sections of it, and a pass whose calls failed logged no summary at all.
``RecordedPass`` reads those calls back from the checkpoints, so a replay fails where the
recording failed and serves each answer to the call that got it:

- A call for several checkpoints (``ModelRequest.answers``, one batch of a pass answered in
  one call) covers the next that many model-written checkpoints. It was answered if the first
  carries an answer and another is a section of it, or the first is a pointer that carries one
  (its section was unusable: a stub's own call never leaves an answer on a pointer); else it
  failed, and its checkpoints were asked one by one after every batch.
- A call for one checkpoint gets, in order: the state asked on its own because its section was
  unusable, then the checkpoints of failed batches and those never batched, in log order.

What cannot be read back: a pass refused after its calls (the inflation guard) logged neither
answers nor texts, and a state folded from several calls logged no answer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh.errors import DshError, ProviderError
from dsh.events import (
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    Event,
)

SUMMARY_FAILED = "summary failed: "
"""How the engine's ``compaction/end`` error starts when the pass's model calls failed."""
REPLAY_FAILED = "REPLAY_FAILED"
"""The code of a replayed call that failed (or was refused) in the recording."""

Call = CompactionSummaryEvent | None
"""A call's recorded answer, or None for a call that failed or whose answer was refused."""


def _section(s: CompactionSummaryEvent) -> bool:
    """Written by the model without a call of its own: a section of a one-call answer."""
    d = s.data
    return not d.llm_stream_call and d.degraded is None and d.provider != "code"


def _call(s: CompactionSummaryEvent) -> Call:
    return s if s.data.llm_stream_call else None


def _made_a_call(s: CompactionSummaryEvent) -> bool:
    return s.data.llm_stream_call or s.data.degraded == "fallback"


@dataclass(slots=True)
class RecordedPass:
    """One recorded pass and how far a replay has asked through it."""

    summaries: list[CompactionSummaryEvent] = field(default_factory=list)
    error: str | None = None
    _cursor: int = 0
    """Model-written checkpoints covered by the batch calls asked so far."""
    _own: deque[Call] = field(default_factory=deque)
    """Calls asked one by one inside answered batches (a state whose section was unusable)."""
    _later: list[CompactionSummaryEvent] = field(default_factory=list)
    """Checkpoints of failed batches: asked one by one after every batch."""
    _single: deque[Call] | None = None

    @property
    def failure(self) -> str | None:
        """The error its model calls failed with, when the pass logged no summary."""
        if self.summaries or self.error is None:
            return None
        return self.error.removeprefix(SUMMARY_FAILED)

    def _model_written(self) -> list[CompactionSummaryEvent]:
        """The checkpoints a call could be asked for (not rollups, not recall-only pointers)."""
        return [s for s in self.summaries if _made_a_call(s) or _section(s)]

    def batch(self, answers: int) -> Call:
        """The answer of a call for ``answers`` checkpoints; None if it failed."""
        span = self._model_written()[self._cursor : self._cursor + answers]
        self._cursor += answers
        head, rest = (span[0], span[1:]) if span else (None, [])
        if (
            head is not None
            and head.data.llm_stream_call
            and (head.data.degraded == "fallback" or any(map(_section, rest)))
        ):
            self._own.extend(_call(s) for s in rest if s.data.llm_stream_call)
            return head
        self._later += [s for s in span if _made_a_call(s)]
        return None

    def single(self) -> Call | str:
        """The next call asked for one checkpoint (a message when the recording has none)."""
        if self._own:
            return self._own.popleft()
        if self._single is None:
            rest = [s for s in self._model_written()[self._cursor :] if _made_a_call(s)]
            ordered = sorted(self._later + rest, key=lambda s: s.seq)
            self._single = deque(_call(s) for s in ordered)
        if not self._single:
            return "the recorded pass made no more model calls"
        return self._single.popleft()


def recorded_passes(events: Sequence[Event]) -> list[RecordedPass]:
    """Every pass of the recording, in the order their ``compaction/start`` was logged."""
    passes: dict[str, RecordedPass] = {}
    for e in events:
        if isinstance(e, CompactionStartEvent):  # one per checkpoint: the first opens the pass
            passes.setdefault(_pass_of(e), RecordedPass())
        elif isinstance(e, CompactionSummaryEvent) and _pass_of(e) in passes:
            passes[_pass_of(e)].summaries.append(e)
        elif isinstance(e, CompactionEndEvent) and _pass_of(e) in passes:
            passes[_pass_of(e)].error = e.data.error
    return list(passes.values())


def _pass_of(e: CompactionStartEvent | CompactionSummaryEvent | CompactionEndEvent) -> str:
    """The pass an event belongs to (every checkpoint of a pass has its own compaction id)."""
    return e.data.pass_id or e.data.compaction_id


def replayed_failure(message: str) -> DshError:
    """An error whose text is ``message``, as the engine logged it (``CODE: detail`` is a
    provider error again), so the replayed pass ends with the recorded words."""
    code, sep, detail = message.partition(": ")
    if sep and code.isupper() and code.replace("_", "").isalpha():
        return ProviderError(code, detail)
    return DshError(message)


def passes_begun(history: Sequence[Event]) -> int:
    """How many passes ``history`` has begun (a pass opens one bracket per checkpoint)."""
    return len({_pass_of(e) for e in history if isinstance(e, CompactionStartEvent)})
