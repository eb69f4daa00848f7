"""The compaction engine: brackets, lock, guard, plan-then-commit, resume, triggers.

A pass: take the lock (the first ``compaction/start``), summarise every planned region off the
surface, check that the surface did not move and that the pass shrinks the context (inflation
guard, same metric on both sides), log ``compaction/plan``, then commit the regions strictly left
to right, one bracket each: start → summary → checkpoint replace → end (``dsh.compaction.commit``).
Any failure before the first commit writes ``compaction/end{error}`` and leaves the surface
untouched. A process killed between commits leaves a plan whose regions are not all committed;
the next pre-step commits the rest from the plan, with no model call and no guard, and first
closes the bracket of a region whose checkpoint landed but whose end did not (killed between the
two), then answers the ``/compact`` that ran the pass (``dsh.compaction.interrupted_command``).
A pass that failed under pressure is said as failed, not as nothing to compact. See
docs/compaction.md, "The events of a pass", "Triggers" and "Failure handling"."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from dsh.compaction.base import (
    CompactionBackend,
    CompactionBusy,
    CompactionError,
    CompactionRefused,
    PassResult,
    Plan,
    Reason,
    RegionText,
    StandingAfterPass,
    checkpoint_message,
    has_checkpoint,
    heuristic_total,
    nothing_to_come,
)
from dsh.compaction.commit import CommitHook, commit_pass, commit_resumed
from dsh.compaction.interrupted_command import answer_interrupted_command, unanswered_command
from dsh.compaction.log_index import LogIndex, unended_landed
from dsh.compaction.plan_check import abandon_plan, plan_abandoned, unlandable
from dsh.compaction.pressure_warning import Pressure, still_above
from dsh.compaction.pruner import prune_tool_results
from dsh.compaction.triggers import (
    MAX_REFUSALS,
    Crossing,
    keep_newest_tool_exchange,
    retry_step,
)
from dsh.compaction.triggers import stale_tokens as _stale_tokens
from dsh.config import CompactionSettings
from dsh.events import (
    CompactionEnd,
    CompactionPlan,
    CompactionPlanEvent,
    CompactionStart,
    CompactionStartEvent,
)
from dsh.surface import Session, message_tokens

log = logging.getLogger("dsh.compaction")


@dataclass(frozen=True, slots=True)
class PassOutcome:
    """What an ``on_pass`` observer hears after each ``run_pass``: the result or the refusal."""

    turn: int | None
    result: PassResult | None
    error: CompactionError | None
    wall_s: float


PassObserver = Callable[[PassOutcome], None]


class CompactionEngine:
    """Runs compaction passes for one session with one backend. ``standing_after_pass``: what
    a landed pass adds to the next request's system and tools (the recall tools, offered from
    the first checkpoint on); the guard, the watermark and the pass figures count it."""

    def __init__(
        self,
        session: Session,
        backend: CompactionBackend,
        settings: CompactionSettings,
        *,
        new_id: Callable[[], str] = lambda: secrets.token_hex(4),
        on_pass: PassObserver | None = None,
        on_commit: CommitHook | None = None,
        standing_after_pass: StandingAfterPass = nothing_to_come,
    ) -> None:
        self.session = session
        self.backend = backend
        self.settings = settings
        self._new_id = new_id
        self._on_pass = on_pass
        self._on_commit = on_commit
        self._standing_after_pass = standing_after_pass
        self._index = LogIndex()
        self.warnings: list[str] = []
        self._crossing = Crossing()
        self._refused = False
        self._last_refusal = ""
        self._failed: str | None = None
        """Why the last attempt's pass did not finish, other than a refusal (None: it landed,
        was refused, or found nothing to compact)."""
        self._settled_plan = -1
        """The seq of the last plan whose ``/compact``, if any, is known to be answered."""

    # ---- budgets ----------------------------------------------------------------------------

    def threshold(self, window: int) -> int:
        return int(window * self.settings.threshold_ratio)

    def retain(self, window: int) -> int:
        return self.settings.retain_for(window)

    # ---- the lock ---------------------------------------------------------------------------

    def live_orphan(self) -> CompactionStartEvent | None:
        """An unmatched ``compaction/start`` of this lifecycle (a dead one blocks nothing; before
        a reopened session's first write, its ``session/end-seed`` is pending and every start in
        the log is dead)."""
        if not self.session.lifecycle_started:
            return None
        self._index.update(self.session)
        live = [s for s in self._index.open_starts.values() if s.seq > self._index.last_end_seed]
        return live[0] if live else None

    def turn_is_open(self) -> bool:
        self._index.update(self.session)
        return self._index.turn_open

    # ---- triggers ---------------------------------------------------------------------------

    def low_watermark(self, window: int) -> int:
        return int(window * self.settings.low_watermark_ratio)

    def next_request_tokens(self, incoming: int = 0) -> int:
        """The next request's size: the surface's measure, plus what a landed checkpoint brings
        to the system and tools before the agent logs its next header (the recall tools) and
        the ``incoming`` heuristic tokens the step logs first, both calibrated as the measure is
        (``dsh.surface.calibration``)."""
        measured = self.session.measure()
        return measured.total_tokens + measured.scale(self._to_come(after_pass=False) + incoming)

    def _to_come(self, *, after_pass: bool) -> int:
        """What the system and tools gain by the next request (``standing_after_pass``): once
        the log holds a checkpoint, or once the pass being estimated lands."""
        if after_pass or has_checkpoint(self.session):
            return self._standing_after_pass(self.session)
        return 0

    async def compact_if_needed(
        self, reason: Reason, *, turn: int | None, window: int, incoming: int = 0
    ) -> PassResult | None:
        """Pressure: when the next request reaches the threshold, compact down to the low
        watermark; ``incoming`` is what the step logs before that request (a turn's prompt and
        its attachments, at its first step), counted in both. Overflow: prune, keep the newest
        tool call and its result, compact the rest. Neither compacts the prompt an open turn
        answers (``dsh.compaction.open_prompt``). Never loops: a refused pass waits until the
        stale material grew by a chunk, and after ``MAX_REFUSALS`` refusals in one crossing the
        engine says so once and stops trying."""
        resumed = self.resume_incomplete(turn=turn)
        if reason == "overflow":
            prune_tool_results(self.session, self.settings)
            watermark = self.low_watermark(window)
            retain = keep_newest_tool_exchange(self.session, watermark // 2, ceiling=watermark)
            return await self._attempt(reason, turn=turn, retain=retain, window=window) or resumed
        threshold = self.threshold(window)
        if self.next_request_tokens(incoming) < threshold:
            self._crossing.reset()
            return resumed
        prune_tool_results(self.session, self.settings)
        if self.next_request_tokens(incoming) < threshold:
            self._crossing.reset()
            return resumed
        crossing = self._crossing
        if crossing.gave_up:
            return resumed
        # what the step logs next is the newest of the tail: the logged tail keeps the rest
        retain = max(0, self.retain(window) - incoming)
        stale = _stale_tokens(self.backend, self.session, retain)
        if crossing.waiting(stale, retry_step(self.settings, window)):
            return resumed  # refused before: the refusals say why, once (``_note_refusal``)
        result = resumed
        for _ in range(self.settings.compaction_retries + 1):
            attempt = await self._attempt(
                reason, turn=turn, retain=retain, window=window, incoming=incoming
            )
            if attempt is None:
                if self._refused:
                    self._note_refusal(stale, threshold)
                elif self._failed is not None:  # not a plan-less one: that costs no call
                    crossing.failed(stale)
                break
            result = attempt
            if self.next_request_tokens(incoming) < threshold:
                return result
        if not self._refused:  # a refused pass is said by its own count (``_note_refusal``)
            self._say_if_above(threshold, window, incoming, compacted=result is not resumed)
        return result

    def _say_if_above(self, threshold: int, window: int, incoming: int, *, compacted: bool) -> None:
        """Warn (once per crossing) when the next request stays above the threshold after a
        pass, or goes over the window with none: the provider refuses it, or one that
        truncates cuts it. With none, it says whether nothing could be compacted or a pass
        failed (and why): a failed pass is tried again once the stale material has grown by
        ``retry_step``, as a refused one is (the window's overflow is recovered meanwhile)."""
        size = self.next_request_tokens(incoming)
        if size >= threshold and (compacted or size > window):
            self._warn_once(self._still_above(threshold, window, incoming, compacted=compacted))

    def _still_above(
        self, threshold: int, window: int, incoming: int, *, compacted: bool = True
    ) -> str:
        """What a request above the threshold says (``pressure_warning.still_above``)."""
        return still_above(
            self.session,
            Pressure(threshold, window, self.settings.threshold_ratio),
            incoming=incoming,
            to_come=self._to_come(after_pass=False),
            failed=None if compacted else self._failed,
            compacted=compacted,
        )

    def _note_refusal(self, stale: int, threshold: int) -> None:
        crossing = self._crossing
        crossing.refused(stale)
        if crossing.refusals >= MAX_REFUSALS:
            crossing.gave_up = True
            self._warn_once(
                f"compaction refused {crossing.refusals} times while the context stayed above "
                f"the threshold {threshold} ({self._last_refusal}); no more attempts until "
                "the context drops below it"
            )

    def _warn_once(self, message: str) -> None:
        if self._crossing.warned:
            return
        self._crossing.warned = True
        self.warnings.append(message)
        log.warning(message)

    async def _attempt(
        self, reason: Reason, *, turn: int | None, retain: int, window: int, incoming: int = 0
    ) -> PassResult | None:
        self._refused, self._failed = False, None
        plan = self._plan_to_watermark(reason, retain=retain, window=window, incoming=incoming)
        if plan is None:
            return None
        try:
            return await self.run_pass(plan, turn=turn)
        except CompactionRefused as exc:
            self._refused = True
            self._last_refusal = str(exc)
            log.info("compaction did not land: %s", exc)
            return None
        except CompactionError as exc:
            self._failed = str(exc)
            log.info("compaction did not land: %s", exc)
            return None

    def _plan_to_watermark(
        self, reason: Reason, *, retain: int, window: int, incoming: int = 0
    ) -> Plan | None:
        """The backend's plan; under pressure, one whose estimated result (with ``incoming``)
        reaches the low watermark (a smaller retained tail, down to a quarter of it) when the
        first does not."""
        plan = self.backend.plan(
            self.session, retain_tokens=retain, focus=None, reason=reason, window=window
        )
        if plan is None or reason != "pressure":
            return plan
        calibrated = self.session.measure().scale(self._estimate(plan) + incoming)
        excess = calibrated - self.low_watermark(window)
        if excess <= 0:
            return plan
        deeper = self.backend.plan(
            self.session,
            retain_tokens=max(retain // 4, retain - excess),
            focus=None,
            reason=reason,
            window=window,
        )
        return deeper or plan

    def _estimate(self, plan: Plan, *, least: bool = False) -> int:
        """Heuristic size after ``plan`` commits, from each region's budgeted (or least) price."""
        total = heuristic_total(self.session) + self._to_come(after_pass=True)
        for region in plan.regions:
            total -= sum(self.session.node_tokens(seq) for seq in region.shadowed_seqs)
            total += region.min_tokens if least else region.estimate_tokens
        return total

    async def compact_now(
        self, *, window: int, focus: str | None = None, source_command_id: str | None = None
    ) -> PassResult | None:
        """Manual compaction of an idle session; None when nothing is compactable."""
        if self.turn_is_open():
            raise CompactionBusy("a turn is running; compact when the session is idle")
        resumed = self.resume_incomplete(turn=None)
        plan = self.backend.plan(
            self.session,
            retain_tokens=self.retain(window),
            focus=focus,
            reason="manual",
            window=window,
        )
        if plan is None:
            return resumed
        return await self.run_pass(plan, turn=None, source_command_id=source_command_id)

    # ---- a pass -----------------------------------------------------------------------------

    async def run_pass(
        self, plan: Plan, *, turn: int | None, source_command_id: str | None = None
    ) -> PassResult:
        """Summarise, guard, log the plan, then commit every region left to right; the
        ``on_pass`` observer hears the result or the refusal."""
        if self._on_pass is None:
            return await self._run_pass(plan, turn=turn, source_command_id=source_command_id)
        started = time.perf_counter()
        try:
            result = await self._run_pass(plan, turn=turn, source_command_id=source_command_id)
        except CompactionError as exc:
            self._on_pass(PassOutcome(turn, None, exc, time.perf_counter() - started))
            raise
        self._on_pass(PassOutcome(turn, result, None, time.perf_counter() - started))
        return result

    async def _run_pass(
        self, plan: Plan, *, turn: int | None, source_command_id: str | None
    ) -> PassResult:
        orphan = self.live_orphan()
        if orphan is not None:
            raise CompactionBusy(
                f"compaction {orphan.data.compaction_id} (seq {orphan.seq}) has not ended"
            )
        for number, region in enumerate(plan.regions, start=1):
            split = self.session.surface.split_call_ids(region.shadowed_seqs)
            if split:  # a planning bug: the fold would refuse the checkpoint mid-commit
                raise CompactionError(
                    f"region {number} would split tool call(s) {split} from their result(s)"
                )
        before_total = heuristic_total(self.session) + self._to_come(after_pass=False)
        floor = self._estimate(plan, least=True)
        if floor >= before_total:  # hopeless: even the shortest checkpoints would not shrink
            raise CompactionRefused(
                f"inflation guard (before any model call): {before_total} -> at least {floor} "
                "tokens would not shrink"
            )
        pass_id = self._new_id()
        before = self.next_request_tokens()
        snapshot = (self.session.replace_generation, tuple(self.session.nodes))
        lock = self.session.append(
            CompactionStart(
                compaction_id=f"{pass_id}-1",
                pass_id=pass_id,
                turn=turn,
                source_command_id=source_command_id,
            )
        )
        assert isinstance(lock, CompactionStartEvent)

        def abort(error: str) -> None:
            self.session.append(
                CompactionEnd(compaction_id=f"{pass_id}-1", pass_id=pass_id, turn=turn, error=error)
            )

        try:
            texts = await self.backend.summarize(plan)
        except Exception as exc:
            abort(f"summary failed: {_describe(exc)}")
            raise CompactionError(f"summary failed: {_describe(exc)}") from exc
        except BaseException:
            abort("cancelled")
            raise
        if (self.session.replace_generation, tuple(self.session.nodes)) != snapshot:
            abort("the surface changed while summarising")
            raise CompactionRefused("the surface changed while summarising")
        after = self._estimate_after(before_total, texts)
        if after >= before_total:
            error = f"inflation guard: {before_total} -> {after} tokens would not shrink"
            abort(error)
            raise CompactionRefused(error)
        self.session.append(CompactionPlan(pass_id=pass_id, regions=tuple(texts)))
        refs = commit_pass(
            self.session,
            self.backend,
            pass_id,
            texts,
            turn,
            source_command_id,
            first_start=lock,
            on_commit=self._on_commit,
        )
        return PassResult(pass_id, refs, before, self.next_request_tokens())

    def _estimate_after(self, before: int, texts: list[RegionText]) -> int:
        provisional = len(self.session.events) + 2
        delta = 0
        for i, region in enumerate(texts):
            delta -= sum(self.session.node_tokens(seq) for seq in region.shadowed_seqs)
            text = self.backend.checkpoint_text(self.session, region, provisional + 4 * i)
            delta += message_tokens(checkpoint_message(text))
        gained = self._to_come(after_pass=True) - self._to_come(after_pass=False)
        return before + gained + delta

    # ---- crash resume -----------------------------------------------------------------------

    def incomplete_plan(self) -> CompactionPlanEvent | None:
        """The latest plan if some of its regions never landed (a process died mid-commit)."""
        self._index.update(self.session)
        plan = self._index.last_plan
        if plan is None:
            return None
        if plan_abandoned(self.session, plan):
            return None
        nodes = set(self.session.nodes)
        pending = [r for r in plan.data.regions if any(s in nodes for s in r.shadowed_seqs)]
        unended = unended_landed(self.session, self._index, plan.data.pass_id)
        return plan if pending or unended else None

    def interrupted_command(self) -> str | None:
        """The ``/compact`` whose process ended after its pass logged the latest plan, still
        unanswered (``dsh.compaction.interrupted_command``): ``resume_incomplete`` answers it."""
        self._index.update(self.session)
        plan = self._index.last_plan
        if plan is None or plan.seq == self._settled_plan:
            return None
        command = unanswered_command(self.session, plan)
        if command is None:
            self._settled_plan = plan.seq
        return command

    def resume_incomplete(self, *, turn: int | None) -> PassResult | None:
        """Commit the rest of an interrupted pass from its plan (no model call, no guard), then
        answer the ``/compact`` that ran it if its process ended before it could."""
        plan = self.incomplete_plan()
        result = None if plan is None else self._commit_rest(plan, turn)
        if self.interrupted_command() is not None and self.incomplete_plan() is None:
            last = self._index.last_plan
            assert last is not None  # a command is found from the latest plan
            answer_interrupted_command(self.session, last)
            self._settled_plan = last.seq
        return result

    def _commit_rest(self, plan: CompactionPlanEvent, turn: int | None) -> PassResult | None:
        """Close landed brackets, then commit ``plan``'s regions still on the surface (or
        abandon the plan when one cannot land); the result, or None when nothing is new."""
        for start in unended_landed(self.session, self._index, plan.data.pass_id):
            self.session.append(
                CompactionEnd(
                    compaction_id=start.data.compaction_id,
                    pass_id=plan.data.pass_id,
                    turn=start.data.turn,
                )
            )
        nodes = set(self.session.nodes)
        remaining = [r for r in plan.data.regions if any(s in nodes for s in r.shadowed_seqs)]
        why = unlandable(self.session, remaining)
        if why is not None:  # a damaged log: commit nothing, and never try this plan again
            abandon_plan(self.session, self._index, plan, turn, f"plan abandoned on resume: {why}")
            return None
        name = self.backend.name  # older plans do not say who wrote the summary
        texts = [
            msgspec.structs.replace(r, provider=r.provider or name, model=r.model or name)
            for r in remaining
        ]
        before = self.next_request_tokens()
        skipped = len(plan.data.regions) - len(remaining)
        pass_id = plan.data.pass_id
        taken = {s.data.compaction_id for s in self._index.open_starts.values()}
        refs = commit_resumed(self.session, self.backend, pass_id, texts, turn, skipped + 1, taken)
        log.info("resumed compaction pass %s: %d region(s) committed", pass_id, len(refs))
        if not refs:
            return None  # only brackets were closed: no checkpoint is new
        return PassResult(pass_id, refs, before, self.next_request_tokens())


def _describe(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
