"""The one-line status bar: model, context use, cache-hit ratio, compaction, activity."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual.widgets import Static


@dataclass(frozen=True, slots=True)
class StatusInfo:
    model: str = ""
    context_tokens: int = 0
    context_window: int | None = None
    cache_ratio: float | None = None
    compaction: str | None = None
    """``compacting…`` / ``compacting · k of N regions`` while a pass runs."""
    busy: str | None = None
    """What is running (``working…``), if anything."""


def _tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    thousands = f"{count / 1000:.1f}".removesuffix(".0")
    return f"{thousands}k"


def status_text(info: StatusInfo) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f" {info.model or 'no model'}", style="bold")
    if info.context_window:
        share = 100 * info.context_tokens / info.context_window
        text.append(f" · context {share:.0f}% of {_tokens(info.context_window)}")
    else:
        text.append(f" · context {_tokens(info.context_tokens)} tokens")
    ratio = "n/a" if info.cache_ratio is None else f"{100 * info.cache_ratio:.0f}%"
    text.append(f" · cache hits {ratio}")
    if info.compaction:
        text.append(f" · {info.compaction}", style="bold yellow")
    if info.busy:
        text.append(f" · {info.busy}", style="italic")
    return text


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        background: $panel;
        color: $text;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.info = StatusInfo()

    def set(self, **changes: Any) -> None:
        info = replace(self.info, **changes)
        if info != self.info:
            self.info = info
            self.update(status_text(info))

    def on_mount(self) -> None:
        self.update(status_text(self.info))
