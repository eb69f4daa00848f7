"""What real model servers get wrong in their streams, put right before the seam.

The adapters (``dsh.llm.openai_compat``, ``dsh.llm.anthropic``) translate a wire stream into
``StreamEvent``s; the shapes below are ones real servers send that the plain translation would
misread (docs/local-models.md, "What dsh puts right in a server's stream"):

- ``CallSlots``: streamed tool calls told apart when the server's ``index`` does not: Gemini's
  OpenAI endpoint sends each call whole with no ``index``, Ollama labels every call
  ``index: 0`` with its own id. A different id on an index whose arguments are complete (or
  empty) opens a new call; a call without an index is found by its id.
- ``arguments_text``: arguments sent as a JSON object instead of a string are its JSON text.
- ``ThinkSplitter``: a reply that opens with ``<think>…</think>`` in its content (Qwen3,
  DeepSeek-R1 distills on a server without a reasoning parser) streams that block as reasoning,
  the tags split across chunks or not; so is the text before a lone ``</think>`` (a template
  that put the opening tag in the prompt), by the rule the class states.
- ``OutputBound``: a server that ignores ``max_tokens`` is stopped at half as much again
  (plus 256 tokens): the reply ends as if cut at the output limit.
- ``wire_count``: a usage figure that is negative, not a number or missing counts as nothing.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Any, Literal

from dsh.llm.types import ReasoningDelta, TextDelta, TextWasReasoning, ToolCallDelta

log = logging.getLogger("dsh.llm")


def arguments_text(value: Any) -> str:
    """A tool call's streamed ``arguments`` piece as text: a string as sent, a JSON value (an
    object some servers and proxies send whole) as its JSON text, nothing as ``""``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _given(value: Any) -> str | None:
    """A non-empty string, else None (an id or name of ``""`` is no id or name)."""
    return value if isinstance(value, str) and value else None


@dataclass(slots=True)
class _Slot:
    ordinal: int
    id: str | None = None
    named: bool = False
    arguments: str = ""

    def open(self) -> bool:
        """Its arguments have started and do not parse yet (a piece is still to come)."""
        if not self.arguments.strip():
            return False
        try:
            json.loads(self.arguments)
        except ValueError:
            return True
        return False


class CallSlots:
    """Chat-completions tool-call deltas numbered as the seam wants: one ordinal per call,
    its id and name passed on once (some servers repeat them on every chunk, some send the
    name after the id)."""

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._by_index: dict[int, _Slot] = {}
        self._by_id: dict[str, _Slot] = {}

    def __bool__(self) -> bool:
        return bool(self._slots)

    def delta(self, index: Any, id: Any, name: Any, arguments: Any) -> ToolCallDelta:
        """The seam's delta for one wire delta (``index`` may be missing: None)."""
        call_id, call_name = _given(id), _given(name)
        wire_index = index if isinstance(index, int) and not isinstance(index, bool) else None
        slot = self._slot(wire_index, call_id, call_name)
        pieces = arguments_text(arguments)
        slot.arguments += pieces
        new_id = call_id if slot.id is None else None
        if new_id is not None:
            slot.id = new_id
            self._by_id.setdefault(new_id, slot)
        new_name = call_name if not slot.named else None
        slot.named = slot.named or new_name is not None
        return ToolCallDelta(index=slot.ordinal, id=new_id, name=new_name, arguments=pieces)

    def _slot(self, index: int | None, call_id: str | None, name: str | None) -> _Slot:
        current: _Slot | None
        if index is not None:
            current = self._by_index.get(index)
            other_id = (
                call_id is not None
                and current is not None
                and current.id
                not in (
                    None,
                    call_id,
                )
            )
            fresh = current is None or (other_id and not current.open())
        elif call_id is not None:
            current = self._by_id.get(call_id)
            fresh = current is None
        else:  # neither: a piece of the last call, or a new call if that one is complete
            current = self._slots[-1] if self._slots else None
            fresh = current is None or (name is not None and current.named and not current.open())
        if not fresh and current is not None:
            return current
        slot = _Slot(ordinal=len(self._slots))
        self._slots.append(slot)
        if index is not None:
            self._by_index[index] = slot
        return slot


_OPEN = "<think>"
_CLOSE = "</think>"
_FENCE = "```"

Split = list[TextDelta | ReasoningDelta | TextWasReasoning]


class ThinkSplitter:
    """Content text with its reasoning written in it turned into reasoning.

    - A block that opens the reply (after whitespace), ``<think>…</think>``, is reasoning; the
      whitespace after its closing tag is dropped.
    - A lone closing tag: templates that put the opening tag in the prompt (Qwen3 thinking,
      DeepSeek-R1 distills, QwQ, served without a reasoning parser) make the model write only
      ``</think>``. The text before the content's first ``</think>`` is reasoning when: no
      ``<think>`` comes before it in the content; it comes before any tool call and any
      reasoning the server sent apart (then the content is the answer); and it stands as a tag,
      not a mention: the rest of its line is blank (spaces, then a line break, the end of the
      content or a tool call), the character before it is not a backtick, and no ``` fence is
      open. Otherwise it, and all after it, is text. That text has streamed as text by then:
      ``TextWasReasoning`` says so, and the whitespace after the tag is dropped. Until the
      splitter knows, the text it gives is ``provisional``; a ``<think>`` in the content (a
      mention: no lone tag can close after it) decides it is text.

    A tag split across chunks is held back until it is whole (or proves not to be one), and a
    lone ``</think>`` until what follows it on its line is known."""

    def __init__(self) -> None:
        self._state: Literal["start", "think", "after", "maybe", "text"] = "start"
        self._held = ""
        self._thinking = False
        """Reasoning has been given (the whitespace that opens the block is not)."""
        self._seen = ""
        """The text given while a lone closing tag may still come ("maybe")."""
        self._apart = False
        """A tool call or the server's own reasoning came: a lone closing tag is text now."""

    def feed(self, text: str) -> Split:
        """The events ``text`` (the next content piece) makes, in order."""
        out: Split = []
        if self._state == "text":
            text, self._held = self._held + text, ""  # a tag held when a mention decided
            return [TextDelta(text)] if text else []
        held = self._held + text
        self._held = ""
        if self._state == "start":
            lead = held.lstrip()
            if len(lead) < len(_OPEN) and _OPEN.startswith(lead):
                self._held = held  # whitespace, or the tag's beginning: wait for more
                return out
            if not lead.startswith(_OPEN):
                self._state = "text" if self._apart else "maybe"
                return self.feed(held)
            self._state = "think"
            held = lead[len(_OPEN) :]
        if self._state == "maybe":
            return self._maybe(held)
        if self._state == "think":
            if not self._thinking:
                held = held.lstrip()
            end = held.find(_CLOSE)
            if end < 0:
                keep = _partial_tail(held, _CLOSE)
                self._held = held[len(held) - keep :] if keep else ""
                thought = held[: len(held) - keep]
                self._thinking = self._thinking or bool(thought)
                return [ReasoningDelta(thought)] if thought else []
            if held[:end]:
                out.append(ReasoningDelta(held[:end]))
            self._state = "after"
            held = held[end + len(_CLOSE) :]
        return out + self._after(held)

    def _after(self, held: str) -> Split:
        rest = held.lstrip()  # the whitespace after the closing tag is not text
        if not rest:
            return []
        self._state = "text"
        return [TextDelta(rest)]

    def _maybe(self, held: str) -> Split:
        """Text while a lone closing tag may still come."""
        end = held.find(_CLOSE)
        if end < 0:
            keep = _partial_tail(held, _CLOSE)
            self._held = held[len(held) - keep :] if keep else ""
            return self._given(held[: len(held) - keep])
        line = held[end + len(_CLOSE) :].lstrip(" \t")
        if not line:  # what follows the tag on its line is not known yet
            self._held = held[end:]
            return self._given(held[:end])
        if line[0] in "\r\n" and self._lone(held[:end]):
            out = [*self._given(held[:end]), TextWasReasoning()]
            self._state = "after"
            return out + self._after(held[end + len(_CLOSE) :])
        self._state = "text"
        return self._given(held)

    def _given(self, text: str) -> Split:
        self._seen += text
        if self._state == "maybe" and _OPEN in self._seen:
            self._state = "text"  # a closing tag after a <think> closes no reasoning
        return [TextDelta(text, provisional=self._state == "maybe")] if text else []

    def _lone(self, before: str) -> bool:
        """A closing tag after ``before`` (and what was given) closes reasoning never opened."""
        seen = self._seen + before
        return _OPEN not in seen and seen.count(_FENCE) % 2 == 0 and not seen.endswith("`")

    def settle(self) -> Split:
        """A tool call, or reasoning the server sent apart, came: what is held goes out (a held
        lone closing tag closes the reasoning before it), and a closing tag after it is text."""
        self._apart = True
        if self._state == "text":
            return self.feed("")
        if self._state != "maybe":
            return []
        self._state = "text"
        return self._closed(self._held)

    def end(self) -> Split:
        """What is still held when the content ends (an unfinished tag is what it says)."""
        if self._state == "maybe":
            self._state = "text"
            return self._closed(self._held)
        held, self._held = self._held, ""
        if not held:
            return []
        return [ReasoningDelta(held)] if self._state == "think" else [TextDelta(held)]

    def _closed(self, held: str) -> Split:
        """``held`` when nothing more comes on its line: a lone tag (only blanks after it)
        closes the reasoning before it; anything else is text."""
        self._held = ""
        if held.startswith(_CLOSE) and not held[len(_CLOSE) :].strip(" \t") and self._lone(""):
            return [TextWasReasoning()]
        return self._given(held)


def _partial_tail(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that is the beginning of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


OUTPUT_MARGIN = 256
"""Tokens over one and a half times the bound before a stream is stopped (``OutputBound``)."""


class OutputBound:
    """Counts a reply's output as it streams, against the ``max_tokens`` the request sent. The
    count is the larger of the pieces received (servers stream about one token a piece) and a
    token a four characters (``dsh.surface.tokens``); past ``bound * 1.5 + OUTPUT_MARGIN`` the
    server has ignored the bound, and the reply is to be ended as cut at the output limit.
    ``bound`` None: nothing is counted."""

    def __init__(self, bound: Any) -> None:
        given = bound if isinstance(bound, int) and not isinstance(bound, bool) else None
        self.bound = given if given is not None and given > 0 else None
        self.stop_at = None if self.bound is None else self.bound + self.bound // 2 + OUTPUT_MARGIN
        self._pieces = 0
        self._chars = 0

    def take(self, text: str) -> None:
        """Count one piece of streamed output (text, reasoning or tool arguments)."""
        if text:
            self._pieces += 1
            self._chars += len(text)

    @property
    def counted(self) -> int:
        """The output's size in tokens, as counted so far."""
        return max(self._pieces, (self._chars + 3) // 4)

    def exceeded(self) -> bool:
        """The server has streamed far past the bound: stop reading (and say so, once)."""
        if self.stop_at is None or self.counted <= self.stop_at:
            return False
        log.warning(
            "the server went on past max_tokens=%d (about %d tokens streamed): dsh stopped "
            "reading the reply, as if cut at the output limit",
            self.bound,
            self.counted,
        )
        return True


def wire_count(value: Any) -> int | None:
    """A usage figure as a count: a number, at least 0 (a negative one is 0); None when the
    server sent none, or something that is not a finite number."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return max(int(value), 0)
