"""The terminal UI's live tail moves what streamed as text into the reasoning when a lone
``</think>`` says it was (``dsh.llm.types.TextWasReasoning``), before the reply is logged."""

from __future__ import annotations

from typing import Any

from dsh.llm.types import ReasoningDelta, TextDelta, TextWasReasoning
from dsh.tui.live_tail import LiveTail


class _View:
    def __init__(self) -> None:
        self.live: list[tuple[str, str, list[str]]] = []

    def set_live(self, text: str, reasoning: str, calls: list[str]) -> None:
        self.live.append((text, reasoning, calls))

    def clear_live(self) -> None:
        self.live.append(("", "", []))


def test_text_a_lone_closing_tag_ends_shows_as_reasoning_from_then_on():
    view: Any = _View()
    tail = LiveTail(view)
    for event in (
        ReasoningDelta("apart. "),
        TextDelta("\nthe user wants 4\n"),
        TextWasReasoning(),
        TextDelta("The answer is 4."),
    ):
        tail.streamed(event)
    assert view.live[-2] == ("", "apart. the user wants 4\n", [])
    assert view.live[-1] == ("The answer is 4.", "apart. the user wants 4\n", [])
