"""Manual compaction as a logged command (``/compact [focus]``, ``dsh compact``)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from dsh.compaction.base import CompactionError, PassResult
from dsh.compaction.engine import CompactionEngine
from dsh.compaction.interrupted_command import compacted_words
from dsh.errors import DshError, error_line
from dsh.events import CommandDone, CommandDoneEvent, CommandRun
from dsh.surface import Session, checkpoint_kind

NOTHING_TO_COMPACT = "No compactable history yet."
"""The answer for a session with no uncompacted history (a new one); else ``nothing_answer``
says why."""
FINISHED_ANOTHERS = (
    "Finished an earlier /compact's pass, left unfinished when its process ended; "
    "nothing else to compact yet."
)
COMPACT_CANCELLED = "Compaction cancelled."


def nothing_answer(engine: CompactionEngine, *, window: int) -> str:
    """What a ``/compact`` that found nothing answers, in every face: ``NOTHING_TO_COMPACT``
    for a session without uncompacted history, else why there is nothing (all of it is in the
    recent tail a pass keeps verbatim) with the figures: that history's size, the tail's, and
    how full the next request leaves the window against the threshold a pass runs at."""
    session = engine.session
    verbatim = sum(
        session.node_tokens(seq) for seq in session.nodes if checkpoint_kind(session, seq) is None
    )
    if verbatim == 0:
        return NOTHING_TO_COMPACT
    share = engine.next_request_tokens() / window
    full = f"{share:.0%}" if share >= 0.01 else "under 1%"
    return (
        f"Nothing to compact yet: all {verbatim:,} tokens of uncompacted history are in the "
        f"recent tail a pass keeps verbatim (at least {engine.retain(window):,} tokens); the "
        f"next request is {full} of the {window:,}-token window, and compaction runs by itself "
        f"at {engine.settings.threshold_ratio:.0%}."
    )


def nothing_to_compact(engine: CompactionEngine, *, window: int, focus: str | None) -> str | None:
    """When ``compact_now`` would find nothing (idle, no interrupted pass nor its unanswered
    ``/compact``, no plan), what the command answers (``nothing_answer``); else None."""
    if engine.turn_is_open() or engine.incomplete_plan() is not None:
        return None  # let the command run and say why (busy) or finish the pass
    if engine.interrupted_command() is not None:
        return None  # let the command run: it answers the interrupted one
    plan = engine.backend.plan(
        engine.session,
        retain_tokens=engine.retain(window),
        focus=focus,
        reason="manual",
        window=window,
    )
    return nothing_answer(engine, window=window) if plan is None else None


def compacted_text(result: PassResult) -> str:
    return compacted_words(result.items, result.shadowed_tokens)


async def run_compact_command(
    engine: CompactionEngine, *, window: int, focus: str | None = None
) -> tuple[bool, str]:
    """Log ``command/run``, compact, log ``command/done`` (``sourceEventSeq`` = the state
    summary's seq). Returns (ok, the answer people see).

    Every ``command/run`` gets its ``command/done``: a cancelled command (``CancelledError``,
    ctrl-c) or one that failed unexpectedly is answered ``ok: false`` before the exception
    goes on. A failure's text is what every face shows, so it is ``error_line``'s one bounded,
    escaped line (an unexpected exception goes on whole, to be logged with its traceback)."""
    session = engine.session
    command_id = f"cmd-{secrets.token_hex(4)}"
    session.append(CommandRun(command_id=command_id, name="compact", args=focus or ""))
    try:
        result = await engine.compact_now(window=window, focus=focus, source_command_id=command_id)
    except CompactionError as exc:
        text = f"Compaction failed: {error_line(str(exc))}"
        session.append(CommandDone(command_id=command_id, ok=False, text=text))
        return False, text
    except BaseException as exc:
        cancelled = isinstance(exc, asyncio.CancelledError | KeyboardInterrupt)
        text = COMPACT_CANCELLED if cancelled else f"Compaction failed: {error_line(exc)}"
        with contextlib.suppress(DshError):  # a closed or lost session keeps the exception
            session.append(CommandDone(command_id=command_id, ok=False, text=text))
        raise
    if result is None:
        nothing = nothing_answer(engine, window=window)
        session.append(CommandDone(command_id=command_id, ok=True, text=nothing))
        return True, nothing
    if _answered_already(session, result):  # only the resumed pass of an earlier /compact
        session.append(CommandDone(command_id=command_id, ok=True, text=FINISHED_ANOTHERS))
        return True, FINISHED_ANOTHERS
    text = compacted_text(result)
    session.append(
        CommandDone(
            command_id=command_id, ok=True, text=text, source_event_seq=result.state_summary_seq
        )
    )
    return True, text


def _answered_already(session: Session, result: PassResult) -> bool:
    """Whether a ``command/done`` logged after ``result``'s state summary cites it: the
    ``/compact`` whose pass this call only finished from its plan was answered with it."""
    for done in reversed(session.of_type(CommandDoneEvent)):
        if done.seq < result.state_summary_seq:
            return False
        if done.data.source_event_seq == result.state_summary_seq:
            return True
    return False
