"""What one step does with how its model call ended (``plan_step``).

A step's reply may carry tool calls. They run, or each is answered with an error result and not
run (so tool pairing holds), and the turn goes on or ends after the step:

- the call failed (``error``): nothing to answer; the turn ends ``error`` (``aborted`` when the
  turn was cancelled before anything was streamed);
- the turn was cancelled mid-stream: the interrupted reply's complete calls are answered
  ``CANCELLED`` with why (``cancelled by the user``, by a stop signal); the turn ends
  ``aborted`` with the same reason;
- the provider stopped the reply (``filtered``): its calls are answered ``NOT_RUN``; the turn
  ends ``error`` with ``FILTERED_REPLY``;
- the reply was cut at the output-token limit (``max-tokens``) with tool calls in it (streamed
  or recovered from text): their arguments may have been cut mid-stream, so none runs; each is
  answered ``NOT_RUN`` with ``CUT_CALL_NOT_RUN`` and the turn goes on, so the model can issue
  them again. A second cut reply with tool calls in a row ends the turn ``max-tokens`` with an
  error naming ``provider.max_output_tokens``;
- the reply was cut with no tool call in it, but with ``text_tool_calls`` on its text begins as
  a call written as text (``starts_like_a_call``): the cut call no longer parses, so nothing
  runs. It counts as a cut call: the model is told in a ``user/message`` (``CUT_CALL_NOTICE``)
  that its call was cut and not run, and the turn goes on; a second cut in a row ends it as
  above;
- the reply (not cut) has no tool call, but with ``text_tool_calls`` on its whole text is a call
  that cannot run: not valid JSON, or naming a tool that does not exist
  (``dsh.agent.unread_calls``). Nothing runs; the model is told why in a ``user/message``
  (``CallOutcome.unread``) and the turn goes on; a second such reply in a row ends it
  ``error`` (``UNREAD_TWICE``);
- otherwise the calls run and the turn goes on (when the reply also wrote calls in its text
  that are not run, the model is told after them: ``after_calls``); a reply without calls ends
  the turn
  (``completed``, or ``max-tokens`` when it was cut, with an error naming
  ``provider.max_output_tokens``: the answer may be incomplete).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsh.agent.text_replies import ReadReply, not_run_notice
from dsh.events import Message, PluginSource, TextBlock, TurnEndKind
from dsh.llm.text_tool_calls import starts_like_a_call
from dsh.llm.types import CUT_CALL_NOTICE, CUT_REPLY, FILTERED_REPLY

CUT_CALL_NOT_RUN = (
    f"not run: {CUT_REPLY}, so this call may be incomplete. Issue it again, shorter, or split "
    "the work into smaller calls."
)
"""What a call of a cut reply is answered with (after ``[NOT_RUN]``), for the model to read."""

CUT_TEXT_CALL_NOT_RUN = (
    f"[NOT_RUN] {CUT_REPLY} while you wrote a tool call, so the call is incomplete and was not "
    "run. Issue it again, shorter, or split the work into smaller calls."
)
"""What the model is told after a cut reply whose tool call, written as text, no longer parses."""


UNREAD_TWICE = (
    "the model's reply was a tool call that could not be run (not valid JSON, or a tool that "
    "does not exist) twice in a row; nothing in it ran"
)
"""The error of a turn whose replies were such calls twice in a row (``StepPlan.unread``)."""


@dataclass(slots=True)
class CallOutcome:
    """How one model call ended: the logged reply and its finish reason, or an error."""

    message: Message | None = None
    finish: str | None = None
    error: str | None = None
    cancelled: str | None = None
    """Why the turn was cancelled during the call (``turn/end``'s error); None: it was not."""
    overflow_retries: int = 0
    output_limit: int | None = None
    """The bound a cut reply was cut at, as the provider reported it (a replay: the recorded
    request's); None: the request's ``max_tokens``."""
    read: ReadReply | None = None
    """What the loop read in the reply's text (``dsh.agent.text_replies``)."""

    @property
    def from_text(self) -> bool:
        """The reply's tool calls were recovered from its text (``provider.text_tool_calls``)."""
        return self.read is not None and self.read.recovered_from_text is not None

    @property
    def calls_complete(self) -> bool:
        """The reply's calls ended before what a cut at the output limit cut (calls taken out
        of prose: their fence closed, and the text after it was dropped): they run even then."""
        return self.read is not None and self.read.from_prose

    @property
    def not_run(self) -> tuple[str, ...]:
        """The calls the reply wrote in its text that are not run."""
        return () if self.read is None else self.read.not_run

    @property
    def unread(self) -> Message | None:
        """What the model is told when the whole reply is a text call that cannot run."""
        return None if self.read is None else self.read.unread


@dataclass(frozen=True, slots=True)
class StepPlan:
    run_calls: bool = False
    """Run the reply's tool calls."""
    unrun: tuple[str, str] | None = None
    """(code, why): answer each of the reply's tool calls with this error, without running it."""
    end: tuple[TurnEndKind, str | None] | None = None
    """(kind, error) the turn ends with after this step; None: the turn goes on."""
    cut: bool = False
    """The reply was cut at the output-token limit with tool calls in it (or one as text)."""
    unread: bool = False
    """The whole reply was a call written as text that cannot run (``CallOutcome.unread``)."""
    notice: Message | None = None
    """A message to log after the reply, for the model: its text tool call was cut, or cannot
    run."""
    after_calls: Message | None = None
    """A message to log after the reply's calls ran, if the turn goes on to another step (not
    after the last one ``max_steps`` allows: no model call would read it), for the model: calls
    it wrote in its text were not run (``not_run_notice``)."""


def plan_step(
    outcome: CallOutcome,
    *,
    before: StepPlan | None,
    params: dict[str, Any],
    text_calls: bool = False,
) -> StepPlan:
    """The plan for a step whose model call ended with ``outcome``; ``before``: the plan of the
    step before in this turn (None: this is its first); ``params``: the
    request's generation parameters (their ``max_tokens`` is named in the error, unless the
    provider reported the bound, ``CallOutcome.output_limit``);
    ``text_calls``: replies are searched for tool calls written as text."""
    if outcome.error is not None:
        return StepPlan(
            end=("aborted" if outcome.cancelled is not None else "error", outcome.error)
        )
    if outcome.cancelled is not None:
        return StepPlan(unrun=("CANCELLED", outcome.cancelled), end=("aborted", outcome.cancelled))
    if outcome.finish == "filtered":  # stopped by the provider: none of it runs
        unrun = ("NOT_RUN", f"not run: {FILTERED_REPLY}")
        return StepPlan(unrun=unrun, end=("error", FILTERED_REPLY))
    message = outcome.message
    calls = message is not None and bool(message.tool_calls())
    cut = outcome.finish == "max-tokens"
    bound = outcome.output_limit or params.get("max_tokens")
    cut_before = before is not None and before.cut
    if cut and calls and not outcome.calls_complete:
        unrun = ("NOT_RUN", CUT_CALL_NOT_RUN)
        if not cut_before:  # the turn goes on: the model may issue the calls again
            return StepPlan(unrun=unrun, cut=True)
        return StepPlan(unrun=unrun, end=("max-tokens", cut_twice(bound)))
    if calls:
        assert message is not None
        told = not_run_notice(message.id, outcome.not_run) if outcome.not_run else None
        return StepPlan(run_calls=True, after_calls=told)
    if cut and text_calls and message is not None and starts_like_a_call(message.text()):
        if not cut_before:  # as a cut call: the model is told, and may issue it again
            return StepPlan(notice=cut_call_notice(message.id), cut=True)
        return StepPlan(end=("max-tokens", cut_twice(bound)))
    if cut:
        return StepPlan(end=("max-tokens", cut_answer(bound)))
    if outcome.unread is not None:  # the model is told why, and may send it again, once
        if before is not None and before.unread:
            return StepPlan(end=("error", UNREAD_TWICE))
        return StepPlan(notice=outcome.unread, unread=True)
    return StepPlan(end=("completed", None))


def cut_call_notice(reply_id: str) -> Message:
    """The message that tells the model its reply ``reply_id`` was cut in a text tool call."""
    return Message(
        id=f"{reply_id}-cut",
        role="user",
        content=(TextBlock(text=CUT_TEXT_CALL_NOT_RUN),),
        source=PluginSource(plugin=CUT_CALL_NOTICE),
    )


def _bound(max_tokens: object) -> str:
    return f" ({max_tokens} tokens)" if isinstance(max_tokens, int) else ""


def cut_answer(max_tokens: object) -> str:
    """The error of a turn whose last reply, with no tool call in it, was cut at the output
    limit: the answer may be incomplete."""
    return (
        f"the model's reply was cut at its output limit{_bound(max_tokens)}, so the answer may "
        "be incomplete; raise provider.max_output_tokens (or the route's max_output_tokens in "
        "[provider.overrides]) or ask for a shorter answer"
    )


def cut_twice(max_tokens: object) -> str:
    """The error of a turn whose replies were cut at the output limit twice in a row."""
    return (
        f"the model's reply was cut at its output limit{_bound(max_tokens)} twice in a row "
        "while it wrote tool calls, so none of them ran; raise provider.max_output_tokens (or "
        "the route's max_output_tokens in [provider.overrides]) or ask for a smaller step"
    )
