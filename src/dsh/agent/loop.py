"""The turn/step loop (docs/architecture.md, "The session log").

One turn: ``turn/start`` → pre-step hooks (automatic compaction hooks in here, before the step's
new input is logged; they count it: ``incoming_tokens``) → ``step/start`` → the user's message
→ ``request/header`` (only if changed) → ``request/context`` (only on a route change) →
``assistant/message`` → (``tool/call``, ``tool/result``) pairs (``dsh.agent.tool_calls``) →
``step/end`` → next step … → ``turn/end``.
Every request is built from the log (``request_from_state``), so what the model saw is always
what was logged. A prompt no request can carry (with what its ``@path`` mentions attach, read
once, before ``turn/start``) is refused before anything is logged (``check_prompt``,
``dsh.agent.room``).

Cancellation (``Agent.cancel``) finalises the streamed prefix as an interrupted assistant
message, answers any unfinished tool call with an error result (a stopped command's with what it
printed until then), and closes the turn as aborted with why it was cancelled (by the user, by a
stop signal: the cancel's reason), so the log stays balanced and loadable; a cancel that lands
before the model call went out logs no reply (there was no call). A provider failure mid-stream
does the same after its ``request/error`` (the message carries the error's code) and closes the
turn as an error. A reply the provider stopped itself (``filtered``: a content filter, a
refusal) is kept, but its tool calls are not run: each gets a ``NOT_RUN`` error result and the
turn ends as an error. The calls of a reply cut at the output-token limit are not run either
(their arguments may be cut): the turn goes on so the model can issue them again, and a second
cut in a row ends it ``max-tokens`` (``dsh.agent.step_outcome``). With ``text_tool_calls`` on, a
reply whose whole text is valid tool calls is logged as those calls
(``dsh.llm.text_tool_calls``) and they run through approval like any other, or not at all when
the reply was cut; a cut reply whose text began as such a call is answered with a
``user/message`` saying so, and counts as a cut call; one not cut that cannot run (not JSON, no
such tool) is answered too (``dsh.agent.unread_calls``). A read-only call repeated in a turn with
the same result is told so in its result, and the turn stops at ``tools.max_repeated_calls``
such calls (``dsh.agent.repeated_calls``), ending ``repeated-calls``; one that takes every step
``max_steps`` allows ends ``max-steps``; at most ``tools.max_calls_per_reply`` calls of a
reply run (``dsh.agent.call_cap``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from dsh.agent.cancel import CANCELLED_BY_USER, CancelRequest, guarded
from dsh.agent.cancel import Cancelled as _Cancelled
from dsh.agent.log_scan import LogScan
from dsh.agent.loggable import loggable_message, loggable_text
from dsh.agent.mentions import Attachment, attachment_notes
from dsh.agent.recall_matches import prompt_notes
from dsh.agent.recall_offer import RecallOffer
from dsh.agent.repeated_calls import RepeatedCalls
from dsh.agent.request import request_from_state
from dsh.agent.request_header import log_header_if_changed
from dsh.agent.retry_notice import retry_warning
from dsh.agent.room import fixed_tokens, prompt_problem
from dsh.agent.step_outcome import CallOutcome, StepPlan, plan_step
from dsh.agent.text_replies import read_reply
from dsh.agent.tool_calls import answer_unrun_calls, is_read_only, run_tool_calls
from dsh.agent.turn_close import close_failed_turn, log_unsent_prompt
from dsh.config import DEFAULT_CONTEXT_WINDOW as DEFAULT_WINDOW
from dsh.config import DEFAULT_MAX_CALLS_PER_REPLY, DEFAULT_MAX_REPEATED_CALLS
from dsh.errors import PromptTooLarge, ProviderError
from dsh.events import (
    AssistantMessage,
    LlmRetry,
    Message,
    RequestConfig,
    RequestContext,
    RequestError,
    RequestHeaderBody,
    StepEnd,
    StepStart,
    TextBlock,
    TurnEnd,
    TurnEndEvent,
    TurnEndKind,
    TurnEndReason,
    TurnStart,
    UserSource,
)
from dsh.llm.assemble import StreamAssembler
from dsh.llm.errors import ErrorCode
from dsh.llm.retry import stream_with_retry
from dsh.llm.types import ModelRequest, Provider, StreamEvent
from dsh.surface import Session, message_tokens
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry

log = logging.getLogger("dsh.agent")

T = TypeVar("T")

PreStepHook = Callable[["Agent", int], Awaitable[None]]
"""Runs before each step's input is logged; gets the agent and the turn number."""

OverflowHandler = Callable[["Agent", int, int], Awaitable[bool]]
"""Called on CONTEXT_WINDOW_EXCEEDED inside the open step; True if the surface changed."""

StreamListener = Callable[[StreamEvent], None]


@dataclass(frozen=True, slots=True)
class AgentConfig:
    provider: str
    model: str
    system: str
    context_window: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    max_steps: int = 50
    max_overflow_retries: int = 1
    retry_attempts: int = 4
    retry_base_delay: float = 0.5
    text_tool_calls: bool = False
    stream_idle_timeout: float | None = None
    call_timeout: float | None = None
    recall: RecallOffer | None = None
    """Tools offered only once the log holds a checkpoint (``dsh.agent.recall_offer``)."""
    max_repeated_calls: int = DEFAULT_MAX_REPEATED_CALLS
    max_calls_per_reply: int = DEFAULT_MAX_CALLS_PER_REPLY  # dsh.agent.call_cap; 0: no limit
    attach_mentions: bool = False
    """``@path`` in a prompt attaches the file (``dsh.agent.mentions``; ``tools.attach_mentions``
    turns it on for the faces)."""
    attach_matches: bool = False  # compacted messages matching a prompt: dsh.agent.recall_matches


@dataclass(frozen=True, slots=True)
class TurnResult:
    turn: int
    reason: TurnEndKind
    text: str
    """The final assistant text of the turn (empty if none)."""
    error: str | None = None


class Agent:
    """Runs turns against one session, one provider and one tool registry."""

    def __init__(
        self,
        session: Session,
        provider: Provider,
        tools: ToolRegistry,
        policy: ApprovalPolicy,
        *,
        config: AgentConfig,
        workspace: Path,
        pre_step_hooks: Sequence[PreStepHook] = (),
        overflow_handler: OverflowHandler | None = None,
        on_stream: StreamListener | None = None,
        sleep: Callable[[float], Coroutine[Any, Any, None]] = asyncio.sleep,
    ) -> None:
        self.session = session
        self.provider = provider
        self.tools = tools
        self.policy = policy
        self.config = config
        self.workspace = workspace
        self.pre_step_hooks = list(pre_step_hooks)
        self.overflow_handler = overflow_handler
        self.on_stream = on_stream
        self._sleep = sleep
        # Made per turn: each asyncio primitive belongs to the loop that first uses it,
        # and a CLI runs every turn in its own ``asyncio.run``.
        self._cancel = CancelRequest()
        self._log_scan = LogScan()
        self.waiting_since: float | None = None
        """Event-loop time a model call started while it has produced nothing yet, else None."""
        self._requested = False
        """The current model call went out (a cancel before that logs no reply)."""
        self._repeats = RepeatedCalls(lambda call: is_read_only(self.tools, call), session)
        self.incoming_tokens = 0
        """What the next step logs before its request (the prompt and attachments of a turn's
        first step, else nothing), by the heuristic: the pressure check counts it, calibrated."""

    # ---- public -----------------------------------------------------------------------------

    def cancel(self, reason: str = CANCELLED_BY_USER) -> None:
        """Cancel the running turn (safe to call from a signal handler via the loop);
        ``reason`` is what its ``turn/end`` and its cancelled calls' results say (the first
        cancel's, when there are several)."""
        self._cancel.request(reason)

    def check_prompt(self, prompt: str, attached: Sequence[Attachment] = ()) -> None:
        """Refuse a prompt no request can carry with the notes ``attached`` to it
        (``PromptTooLarge``, one line: ``dsh.agent.room``) before anything is logged;
        ``run_turn`` checks first, faces may check earlier."""
        cfg = self.config
        reply = cfg.params.get("max_tokens")
        problem = prompt_problem(
            prompt,
            fixed=fixed_tokens(self.standing_header()),
            window=cfg.context_window or DEFAULT_WINDOW,
            reply=reply if isinstance(reply, int) else 0,
            attach=cfg.attach_mentions,
            attached=attached,
            scale=self.session.measure().scale,
        )
        if problem is not None:
            raise PromptTooLarge(problem)

    async def run_turn(
        self, prompt: str, attached: Sequence[Attachment] | None = None
    ) -> TurnResult:
        """Run one turn for a user prompt and return how it ended; a turn an exception stops
        is closed as an error (``turn_close``) before the exception goes on. A prompt
        ``check_prompt`` refuses with its attachments (``attached``, else read here, in a
        thread) raises before the turn starts: nothing is logged."""
        self.check_prompt(prompt)
        self._cancel = CancelRequest()  # a cancel while the attachments are read ends the turn
        if attached is None:  # read in a thread
            attached = await asyncio.to_thread(self.attachments, prompt)
        self.check_prompt(prompt, attached)
        self._repeats.start_turn(self.config.max_repeated_calls)
        turn = 1 + self._log_scan.update(self.session).turns
        start = self.session.append(TurnStart(turn=turn)).seq
        try:
            return await self._turn(turn, prompt, attached)
        except Exception as exc:
            ends = self.session.of_type(TurnEndEvent)
            if not ends or ends[-1].seq < start:
                try:
                    close_failed_turn(self.session, start, turn, loggable_text(str(exc)))
                except Exception:
                    log.warning("could not close the failed turn %d", turn, exc_info=True)
            raise

    def attachments(self, prompt: str) -> tuple[Attachment, ...]:
        """The notes that follow ``prompt`` (``dsh.agent.recall_matches.prompt_notes``); blocking
        reads: a face on an event loop calls it in a thread."""
        return prompt_notes(self, prompt)

    async def _turn(self, turn: int, prompt: str, attached: Sequence[Attachment]) -> TurnResult:
        pending: list[Message] = [
            Message(
                id=f"u-{turn}",
                role="user",
                content=(TextBlock(text=loggable_text(prompt)),),
                source=UserSource(),
            ),
            *attachment_notes(attached, turn=turn),
        ]
        last_text = ""
        step = 0
        overflow_retries = 0
        before: StepPlan | None = None  # the plan of the step before (a cut, an unread call)
        while True:
            self.incoming_tokens = sum(message_tokens(message) for message in pending)
            try:
                await self._guard(self._run_hooks(turn))
            except _Cancelled as stop:
                log_unsent_prompt(self.session, turn, step + 1, pending)
                return self._end_turn(turn, "aborted", last_text, stop.reason)
            step += 1
            if step > self.config.max_steps:
                why = f"stopped after {self.config.max_steps} steps (max_steps)"
                return self._end_turn(turn, "max-steps", last_text, why)
            self.session.append(StepStart(turn=turn, step=step))
            for message in pending:
                self.session.append(message)
            pending = []
            outcome = await self._model_call(turn, step, overflow_retries)
            overflow_retries = outcome.overflow_retries
            if outcome.message is not None:
                last_text = outcome.message.text() or last_text
            plan = plan_step(
                outcome,
                before=before,
                params=self.config.params,
                text_calls=self.config.text_tool_calls,
            )
            before = plan
            calls = outcome.message.tool_calls() if outcome.message is not None else ()
            if plan.unrun is not None:
                answer_unrun_calls(self.session, turn, step, calls, *plan.unrun, outcome.from_text)
            if plan.notice is not None:  # a text tool call was cut or cannot run: it is told
                self.session.append(plan.notice)
            end = plan.end
            cancelled = None
            if plan.run_calls:
                cancelled = await run_tool_calls(
                    self.session,
                    self.tools,
                    self.policy,
                    self.workspace,
                    calls,
                    turn=turn,
                    step=step,
                    from_text=outcome.from_text,
                    guard=self._guard,
                    repeats=self._repeats,
                    limit=self.config.max_calls_per_reply,
                )
            if cancelled is not None:
                end = ("aborted", cancelled)
            elif self._repeats.stop is not None:  # the same read-only call, once too often
                end = ("repeated-calls", self._repeats.stop)
            goes_on = end is None and step < self.config.max_steps  # a next step may run
            if goes_on and plan.after_calls is not None:  # the model reads it in the next step
                self.session.append(plan.after_calls)
            self.session.append(StepEnd(turn=turn, step=step))
            if end is not None:
                return self._end_turn(turn, end[0], last_text, end[1])

    # ---- steps ------------------------------------------------------------------------------

    async def _run_hooks(self, turn: int) -> None:
        """Pre-step hooks may fail (a compaction that could not land); the turn goes on."""
        for hook in self.pre_step_hooks:
            try:
                await hook(self, turn)
            except Exception:
                log.warning("a pre-step hook failed; continuing the turn", exc_info=True)

    async def _recover(self, turn: int, step: int) -> bool:
        """The overflow handler may fail like a pre-step hook; the turn then ends as the
        overflow error it answered (its step and turn closed)."""
        assert self.overflow_handler is not None
        try:
            return await self.overflow_handler(self, turn, step)
        except Exception:
            log.warning("overflow recovery failed; ending the turn", exc_info=True)
            return False

    def _end_turn(self, turn: int, kind: TurnEndKind, text: str, error: str | None) -> TurnResult:
        error = loggable_text(error) if error is not None else None
        self.session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind=kind, error=error)))
        self.session.sync()
        return TurnResult(turn=turn, reason=kind, text=text, error=error)

    def current_header(self) -> RequestHeaderBody:
        """What the next request carries: config, system prompt, tools (recall once offered)."""
        cfg = self.config
        header = RequestHeaderBody(
            config=RequestConfig(
                provider=cfg.provider, model=cfg.model, params=dict(cfg.params) or None
            ),
            system=cfg.system,
            tools=tuple(self.tools.specs()) or None,
        )
        return header if cfg.recall is None else cfg.recall.header(self.session, header)

    def standing_header(self) -> RequestHeaderBody:
        """The header as requests carry it once the recall tools are offered (from the first
        checkpoint on): the fixed part the room rules price (``dsh.agent.room``)."""
        header = self.current_header()
        return header if self.config.recall is None else self.config.recall.offered(header)

    def _log_header_and_route(self) -> RequestHeaderBody:
        header = self.current_header()
        log_header_if_changed(self.session, header)
        route = RequestContext(
            provider=self.config.provider,
            model=self.config.model,
            context_window=self.config.context_window,
        )
        if self._log_scan.update(self.session).route != route:
            self.session.append(route)
        return header

    async def _model_call(self, turn: int, step: int, overflow_retries: int) -> CallOutcome:
        route = (self.config.provider, self.config.model)
        while True:
            # read again on a retry: the overflow pass may be the first checkpoint, which
            # brings the recall tools its stubs point to
            header = self._log_header_and_route()
            request = request_from_state(header, self.session.surface)
            assembler = StreamAssembler()
            self._requested = False
            try:
                await self._guard(self._stream(request, assembler, turn, step))
                # A streamed tool call without an id or a name fails here, like a broken stream.
                message = loggable_message(assembler.message(f"a-{turn}-{step}", *route))
            except _Cancelled as stop:
                if not self._requested:  # cancelled before the call went out: no model call
                    return CallOutcome(
                        error=stop.reason, cancelled=stop.reason, overflow_retries=overflow_retries
                    )
                message = loggable_message(assembler.partial_message(f"a-{turn}-{step}", *route))
                self.session.append(
                    AssistantMessage(turn=turn, step=step, message=message, interrupted=True)
                )
                return CallOutcome(
                    message=message, cancelled=stop.reason, overflow_retries=overflow_retries
                )
            except ProviderError as exc:
                self.session.append(
                    RequestError(
                        turn=turn,
                        step=step,
                        code=exc.code,
                        message=loggable_text(exc.detail),
                        retryable=exc.retryable,
                    )
                )
                if assembler.started:  # what was streamed is kept, marked (maybe empty)
                    self._log_partial(turn, step, assembler, exc.code)
                elif (
                    exc.code == ErrorCode.CONTEXT_WINDOW_EXCEEDED
                    and self.overflow_handler is not None
                    and overflow_retries < self.config.max_overflow_retries
                ):
                    overflow_retries += 1
                    try:
                        if await self._guard(self._recover(turn, step)):
                            continue  # the surface changed: retry in the same step
                    except _Cancelled as stop:
                        return CallOutcome(
                            error=stop.reason,
                            cancelled=stop.reason,
                            overflow_retries=overflow_retries,
                        )
                return CallOutcome(error=str(exc), overflow_retries=overflow_retries)
            reply = read_reply(
                message,
                assembler,
                self.config.text_tool_calls,
                f"text-{turn}-{step}",
                self.tools,
            )
            self.session.append(
                AssistantMessage(
                    turn=turn,
                    step=step,
                    message=reply.message,
                    usage=assembler.usage,
                    recovered_from_text=reply.recovered_from_text,
                    text_calls_not_run=reply.not_run,
                )
            )
            return CallOutcome(
                message=reply.message,
                finish=assembler.finish,
                output_limit=assembler.output_limit,
                overflow_retries=overflow_retries,
                read=reply,
            )

    def _log_partial(
        self, turn: int, step: int, assembler: StreamAssembler, error_code: str
    ) -> None:
        """Log a failed stream's prefix; its complete tool calls get error results (not run)."""
        cfg = self.config
        message = assembler.partial_message(f"a-{turn}-{step}", cfg.provider, cfg.model)
        message = loggable_message(message)
        self.session.append(
            AssistantMessage(
                turn=turn, step=step, message=message, interrupted=True, error_code=error_code
            )
        )
        why = f"not run: the model's reply was cut off ({error_code})"
        answer_unrun_calls(self.session, turn, step, message.tool_calls(), "NOT_RUN", why)

    async def _stream(
        self, request: ModelRequest, assembler: StreamAssembler, turn: int, step: int
    ) -> None:
        def on_retry(attempt: int, error: ProviderError, delay: float) -> None:
            self.session.append(
                LlmRetry(
                    turn=turn,
                    step=step,
                    attempt=attempt,
                    code=error.code,
                    message=loggable_text(error.detail),
                    delay_ms=round(delay * 1000),
                ),
                ignorable=True,
            )
            log.warning("%s", retry_warning(attempt, self.config.retry_attempts, error, delay))

        cfg = self.config
        self._requested = True
        self.waiting_since = asyncio.get_running_loop().time()
        try:
            async for event in stream_with_retry(
                self.provider,
                request,
                history=self.session.events,
                max_attempts=cfg.retry_attempts,
                base_delay=cfg.retry_base_delay,
                on_retry=on_retry,
                sleep=self._sleep,
                idle_timeout=cfg.stream_idle_timeout,
                deadline=cfg.call_timeout,
            ):
                self.waiting_since = None
                assembler.feed(event)
                if self.on_stream is not None:
                    self.on_stream(event)
        finally:
            self.waiting_since = None

    # ---- cancellation -----------------------------------------------------------------------

    async def _guard(self, work: Awaitable[T]) -> T:
        """Await ``work`` unless the turn is cancelled first (then raise _Cancelled, with
        why)."""
        return await guarded(self._cancel, work)
