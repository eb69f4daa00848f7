"""Which call a tool result answers when call ids repeat across replies.

Some OpenAI-compatible servers (llama.cpp, some vLLM and Ollama versions) number a reply's tool
calls from ``call_0`` again in every reply, so an id names one call only within its reply (the
loop makes ids unique within a reply, ``dsh.llm.assemble.unique_call_ids``). A reply's results
are logged before the next reply, so the rule everything that pairs calls with results across a
session follows is: **a result answers the nearest earlier call of its id that has no result
yet** (docs/architecture.md, "Tool-call pairing"). ``OpenCalls`` keeps that rule in one place.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class OpenCalls(Generic[T]):
    """Calls that have no result yet, each with a value (a seq, a name, …), by call id.

    ``answer`` pairs a result with the nearest earlier open call of its id; ``pending`` is what
    is still open, in the order the calls were opened."""

    __slots__ = ("_by_id", "_next")

    def __init__(self) -> None:
        self._by_id: dict[str, list[tuple[int, T]]] = {}
        """Per call id, its open calls (the order each was opened, its value), oldest first."""
        self._next = 0

    def open(self, call_id: str, value: T) -> None:
        """A call with ``call_id`` was made."""
        opened = self._by_id.get(call_id)
        if opened is None:
            self._by_id[call_id] = [(self._next, value)]
        else:
            opened.append((self._next, value))
        self._next += 1

    def latest(self, call_id: str) -> T | None:
        """The value of the nearest earlier open call of ``call_id`` (None: none is open)."""
        opened = self._by_id.get(call_id)
        return opened[-1][1] if opened else None

    def answer(self, call_id: str) -> T | None:
        """A result for ``call_id`` arrived: close the nearest earlier open call of that id and
        return its value (None: no call of that id is open)."""
        opened = self._by_id.get(call_id)
        if not opened:
            return None
        _, value = opened.pop()
        if not opened:
            del self._by_id[call_id]
        return value

    def pending(self) -> list[T]:
        """The values of the calls still open, in the order they were opened."""
        entries = sorted((entry for opened in self._by_id.values() for entry in opened), key=_order)
        return [value for _, value in entries]


def _order(entry: tuple[int, object]) -> int:
    return entry[0]
