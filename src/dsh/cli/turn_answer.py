"""What ``dsh run`` prints as a turn's answer, a failed or stopped turn's included.

A turn's answer is the text of its last reply (``TurnResult.text``). A model call that fails
part-way (its server dies mid-reply, the stream goes idle past ``stream_idle_timeout``, an
error arrives inside the stream) or that a signal cancels leaves its reply logged as it was
streamed, marked ``interrupted``; the turn's result does not count that reply when it failed,
so the words the model had already written were in the log but never printed. Here they are
the answer, marked ``partial``: plain ``dsh run`` prints them before the error line, and
``--json-stream``'s ``turn_end`` carries them (``text``) with ``partial: true``.

Only the reply's text is taken: a tool call the stream cut short is not in the logged reply
(``StreamAssembler.partial_message``) and was never run, and a complete one that the failure
left unrun is answered ``NOT_RUN`` in the log; neither is printed as an answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsh.agent.loop import TurnResult
from dsh.events import AssistantMessageEvent
from dsh.surface import Session


@dataclass(frozen=True, slots=True)
class TurnAnswer:
    text: str
    """What ``dsh run`` prints for the turn (empty: nothing)."""
    partial: bool
    """The text is a reply cut short (a failed or cancelled model call), not a finished one."""


def turn_answer(session: Session, result: TurnResult) -> TurnAnswer:
    """The answer of the turn ``result`` ended, as ``session``'s log holds it (module
    docstring): its last reply's text if a failure or a cancel cut that reply after some text
    had streamed, else the turn's final text."""
    last = _last_reply(session, result.turn)
    if last is not None and last.data.interrupted:
        text = last.data.message.text()
        if text:
            return TurnAnswer(text, partial=True)
    return TurnAnswer(result.text, partial=False)


def _last_reply(session: Session, turn: int) -> AssistantMessageEvent | None:
    """The last reply logged in ``turn`` (None: it has none)."""
    for reply in reversed(session.of_type(AssistantMessageEvent)):
        if reply.data.turn != turn:
            return None  # the turn's replies are the last ones
        if reply.surface_op == "append":
            return reply
    return None
