"""Manual compaction as a logged command (``/compact [focus]``, ``dsh compact``)."""

from __future__ import annotations

import secrets

from dsh.compaction.base import CompactionError, PassResult
from dsh.compaction.engine import CompactionEngine
from dsh.events import CommandDone, CommandRun

NOTHING_TO_COMPACT = "No compactable history yet."


def compacted_text(result: PassResult) -> str:
    return f"Compacted {result.items} history items (~{result.shadowed_tokens} tokens)"


async def run_compact_command(
    engine: CompactionEngine, *, window: int, focus: str | None = None
) -> tuple[bool, str]:
    """Log ``command/run``, compact, log ``command/done`` (``sourceEventSeq`` = the state
    summary's seq). Returns (ok, the answer people see)."""
    session = engine.session
    command_id = f"cmd-{secrets.token_hex(4)}"
    session.append(CommandRun(command_id=command_id, name="compact", args=focus or ""))
    try:
        result = await engine.compact_now(window=window, focus=focus, source_command_id=command_id)
    except CompactionError as exc:
        text = f"Compaction failed: {exc}"
        session.append(CommandDone(command_id=command_id, ok=False, text=text))
        return False, text
    if result is None:
        session.append(CommandDone(command_id=command_id, ok=True, text=NOTHING_TO_COMPACT))
        return True, NOTHING_TO_COMPACT
    text = compacted_text(result)
    session.append(
        CommandDone(
            command_id=command_id, ok=True, text=text, source_event_seq=result.state_summary_seq
        )
    )
    return True, text
