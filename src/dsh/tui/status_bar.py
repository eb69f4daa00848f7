"""The one-line status bar: model, the approval mode (unless ``ask``), context use, cache-hit
ratio, compaction, activity, and whether the workspace's project config is trusted (only when
there is one)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.widgets import Static

from dsh.config import is_trusted
from dsh.errors import printable_line


@dataclass(frozen=True, slots=True)
class StatusInfo:
    model: str = ""
    approval: str | None = None
    """The approval mode when it is not ``ask`` (``auto``: every call runs unasked)."""
    context_tokens: int = 0
    context_window: int | None = None
    cache_ratio: float | None = None
    compaction: str | None = None
    """``compacting…`` / ``compacting · k of N regions`` while a pass runs."""
    busy: str | None = None
    """What is running (``working…``), if anything."""
    trust: str | None = None
    """Whether the workspace's own ``.dsh/config.toml`` is trusted (only when it has one)."""


def _tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    thousands = f"{count / 1000:.1f}".removesuffix(".0")
    return f"{thousands}k"


def status_text(info: StatusInfo) -> Text:
    """The bar's line; its words from elsewhere (a model's name a log recorded, a ``!cmd``)
    shown as ``printable_line`` shows them."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f" {printable_line(info.model) or 'no model'}", style="bold")
    if info.approval:
        style = "bold red" if info.approval == "auto" else "bold"
        text.append(" · ").append(f"approval {info.approval}", style=style)
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
        text.append(f" · {printable_line(info.busy)}", style="italic")
    if info.trust:
        text.append(f" · {info.trust}", style="dim")
    return text


def trust_label(workspace: Path, environ: Mapping[str, str] | None = None) -> str | None:
    """``project config trusted``/``untrusted`` when ``workspace`` has ``.dsh/config.toml``."""
    if not (workspace / ".dsh" / "config.toml").is_file():
        return None
    if is_trusted(workspace, environ):
        return "project config trusted"
    return "project config untrusted: safety keys ignored (dsh trust)"


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
