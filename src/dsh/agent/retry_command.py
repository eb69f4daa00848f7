"""``/retry`` for every face that has it (the terminal UI, ``dsh web``'s composer): the prompt of
the session's last turn, to be sent again as a new turn, when that turn did not complete (it
failed — a provider error, an error the loop logged —, was cancelled or stopped (a cancel, its
step limit, a tool call repeated too often), was cut at the
output limit, or a crash left it open); otherwise the one line that says why there is nothing
to retry.

The prompt is the one the log holds (``user/message`` of a person, the turn's first message):
what was sent, ``!cmd`` output it carried included, so the model gets the same words again;
its ``@path`` mentions are read again, as they are now. Nothing is logged here: the face sends
the prompt as it sends a typed one."""

from __future__ import annotations

from dataclasses import dataclass

from dsh.events import APPEND, TurnEndEvent, TurnStartEvent, UserMessageEvent, UserSource
from dsh.surface import Session

NOTHING_YET = "Nothing to retry: no turn has run in this session yet."
COMPLETED = "Nothing to retry: the last turn completed (/retry re-sends a failed or cancelled one)."
NO_PROMPT = "Nothing to retry: the last turn's prompt is not in the log (it was never sent)."

ENDED_AS = {
    "aborted": "was cancelled",
    "error": "failed",
    "max-tokens": "was cut at the output limit",
    "interrupted": "was interrupted",
    "max-steps": "stopped at its step limit",
    "repeated-calls": "stopped repeating the same tool call",
}


@dataclass(frozen=True, slots=True)
class Retry:
    prompt: str | None
    """The prompt to send again (None: nothing to retry, ``note`` says why)."""
    note: str
    """What the face says: that the prompt is sent again, or why nothing is."""


def last_turn_retry(session: Session | None) -> Retry:
    """What ``/retry`` does in ``session`` (None: no session yet)."""
    starts = session.of_type(TurnStartEvent) if session is not None else ()
    if session is None or not starts:
        return Retry(None, NOTHING_YET)
    start = starts[-1]
    ends = session.of_type(TurnEndEvent)
    end = ends[-1] if ends and ends[-1].seq > start.seq else None
    if end is not None and end.data.reason.kind == "completed":
        return Retry(None, COMPLETED)
    prompt = _prompt_after(session, start.seq)
    if prompt is None:
        return Retry(None, NO_PROMPT)
    how = ENDED_AS.get(end.data.reason.kind, "did not complete") if end else "never ended"
    return Retry(prompt, f"Retrying the last turn's prompt (that turn {how}).")


def _prompt_after(session: Session, start: int) -> str | None:
    """The text of the turn's prompt: the first message a person sent after seq ``start``
    (the user messages read from the newest back to the turn's start)."""
    prompt = None
    for event in reversed(session.of_type(UserMessageEvent)):
        if event.seq < start:
            break
        if event.surface_op == APPEND and isinstance(event.data.source, UserSource):
            prompt = event.data.text()
    return prompt or None
