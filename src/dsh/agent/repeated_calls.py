"""Noticing a model that repeats one read-only tool call within a turn (``RepeatedCalls``).

A small model may read the same file again and again, getting the same text each time
(Qwen2.5-Coder 0.5B on llama.cpp called ``read_file`` on one file eleven times in a turn, then
ended with an empty answer). The loop tells the model, and stops it:

- A call *repeats* when its tool is read-only (``kind == "read"``: the classification the loop
  orders a reply's calls by, ``call_order``), its name and canonical arguments (the arguments'
  JSON with sorted keys and no spaces; arguments that are not JSON, as written) equal those of
  an earlier call of the same turn, and its result (text and error code) is byte-identical to
  that call's latest result, which the model must still see: a result compaction or pruning has
  replaced since no longer counts. The repeat's result then ends with a one-line note
  (``REPEAT_NOTE``) saying how many times in a row the model has now got this result (the
  first included): the model sees no step numbers, but it can count. The note is part of the
  logged ``tool/result``, so the request rebuilt from the log is the one that was sent.
- Any call that is not read-only (a write, a command, a todo update, an MCP tool, a tool that
  does not exist) forgets every earlier call of the turn, whatever its outcome (a refused or
  failed one too: one rule, no guessing what a command changed). Calls are taken in the reply's
  order, which is the order they run in: the reads before such a call finished before it began,
  the reads after it began after it ended.
- A result that differs from that call's latest one (the file changed although no call of the
  turn changed it) is not a repeat: the count starts again from it.
- When one call has got the same result ``limit`` times (``tools.max_repeated_calls``, the first
  time included; 0: no limit), the turn ends after that step's results are logged,
  ``repeated-calls`` with a one-line reason (``stop``), which every face shows as it shows a
  turn stopped at ``max_steps`` (``max-steps``).

Calls answered without being run (a cut, filtered or cancelled reply's) are not seen here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass

from dsh.events import ToolCallBlock
from dsh.surface import Session
from dsh.tools.base import ToolOutput

REPEAT_NOTE = (
    "[Same call and same result as earlier in this turn: you have now got this result {times} "
    "times; nothing changed — use that result instead of calling again.]"
)
"""The line a repeated read-only call's result ends with, for the model to read."""

LIMIT_KEY = "tools.max_repeated_calls"
ARGUMENTS_SHOWN = 80
"""Characters of a call's arguments the stop reason quotes."""


def canonical_arguments(arguments: str) -> str:
    """``arguments`` as JSON with sorted keys and no spaces, or as written if not JSON."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def with_note(text: str, times: int) -> str:
    """``text`` followed by the repeat note on a line of its own; ``times``: how many times in a
    row the call has got this result, this one included (2 for the first repeat)."""
    note = REPEAT_NOTE.format(times=times)
    return f"{text}{note}" if not text or text.endswith("\n") else f"{text}\n{note}"


def stop_reason(name: str, arguments: str, limit: int) -> str:
    """The one line a turn stopped at the repeat limit ends with (``arguments`` canonical:
    JSON has no line break; other text is quoted as a JSON string, which has none either)."""
    try:
        json.loads(arguments)
        shown = arguments
    except ValueError:
        shown = json.dumps(arguments, ensure_ascii=False)
    if len(shown) > ARGUMENTS_SHOWN:
        shown = shown[: ARGUMENTS_SHOWN - 1] + "…"
    return (
        f"the model called {name} {shown} {limit} times in this turn and got the same result "
        f"each time ({LIMIT_KEY} = {limit})"
    )


@dataclass(slots=True)
class _Latest:
    """The latest result of one read-only call since the turn began or was last reset."""

    text: str
    code: str | None
    seq: int
    times: int
    """How many times in a row the call has got this result (the first included)."""


class RepeatedCalls:
    """The current turn's read-only calls and their results, in the order they are logged."""

    def __init__(self, read_only: Callable[[ToolCallBlock], bool], session: Session) -> None:
        """``read_only``: whether a call's tool only reads; ``session``: the loop's, whose
        surface tells what the model still sees."""
        self._read_only = read_only
        self._session = session
        self._limit = 0
        self._latest: dict[tuple[str, str], _Latest] = {}
        self.stop: str | None = None
        """Why the turn must end after this step (the first call to reach the limit)."""

    def start_turn(self, limit: int) -> None:
        """Forget the last turn's calls; ``limit``: ``tools.max_repeated_calls`` (0: none)."""
        self._limit = limit
        self._latest.clear()
        self.stop = None

    def log_result(
        self,
        call: ToolCallBlock,
        output: ToolOutput,
        append: Callable[[ToolOutput], int],
    ) -> None:
        """Log ``call``'s ``output`` with ``append`` (which returns the result's seq), with the
        repeat note when it repeats an earlier call's result; a call that may change something
        forgets the earlier calls."""
        if not self._read_only(call):
            self._latest.clear()
            append(output)
            return
        key = (call.name, canonical_arguments(call.arguments))
        code = (output.code or "TOOL_ERROR") if output.is_error else None
        latest = self._latest.get(key)
        if latest is None or (latest.text, latest.code) != (output.text, code):
            latest = None
        elif latest.seq not in self._session.surface:
            latest = None  # replaced by compaction: the model no longer sees that result
        if latest is None:
            seq = append(output)
            self._latest[key] = _Latest(output.text, code, seq, 1)
            return
        latest.times += 1
        noted = dataclasses.replace(output, text=with_note(output.text, latest.times))
        latest.seq = append(noted)
        if self.stop is None and self._limit and latest.times >= self._limit:
            self.stop = stop_reason(call.name, key[1], self._limit)
