"""The one-line status bar: model, the approval mode (unless ``ask``), the workspace when a
resumed session runs its tools elsewhere than where ``dsh`` was started
(``dsh.tui.workspace_shown``), context use, the session's spend so far (``/cost``'s figure:
``dsh.agent.spend``), cache-hit ratio, compaction, activity — what runs,
how many drafts wait to be sent after it, and the key that cancels it — and whether the
workspace's project config is trusted (only when there is one).

Like the keys hint (``dsh.tui.hint_line``), the line is fitted to its width by leaving out
the parts least needed, whole, so on an 80-column terminal what runs and what is queued are
never cut away for the cache-hit ratio: each part has a rank, the highest ranks go first and
the rest keep their order; the model and the activity stay (cut at the edge if even they do
not fit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events
from textual.widgets import Static

from dsh.config import trust_state
from dsh.config.project import project_config_loads
from dsh.errors import printable_line
from dsh.tui.context_view import spend_line
from dsh.tui.controller import Controller


@dataclass(frozen=True, slots=True)
class StatusInfo:
    model: str = ""
    approval: str | None = None
    """The approval mode when it is not ``ask`` (``auto``: every call runs unasked)."""
    context_tokens: int = 0
    context_window: int | None = None
    spend: str | None = None
    """The session's spend so far, ``/cost``'s figure (``dsh.agent.spend``: ``$0.0420 · 183k
    tok``); None before any call reported usage."""
    cache_ratio: float | None = None
    compaction: str | None = None
    """``compacting…`` / ``compacting · k of N regions`` while a pass runs."""
    busy: str | None = None
    """What is running (``working…``), if anything."""
    cancels: bool = False
    """Whether what runs is cancelled by a key (a turn): the bar names the key."""
    queued: int = 0
    """Drafts queued to be sent when what runs ends."""
    workspace: str | None = None
    """Where tools run, when that is not where ``dsh`` was started (``~/proj``)."""
    trust: str | None = None
    """Whether the workspace's own ``.dsh/config.toml`` is trusted (only when it has one)."""


def _tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    thousands = f"{count / 1000:.1f}".removesuffix(".0")
    return f"{thousands}k"


Part = tuple[Text, int]
"""A part of the status line and its rank (0 stays longest)."""
SEPARATOR = " · "


def cancel_key(info: StatusInfo) -> str | None:
    """``esc cancels``, or ``ctrl+c cancels`` while a draft is queued (esc then takes the
    draft back first); None when nothing runs that a key cancels."""
    if not (info.busy and info.cancels):
        return None
    return "ctrl+c cancels" if info.queued else "esc cancels"


def status_parts(info: StatusInfo) -> list[Part]:
    """The line's parts in their order, each with its rank; its words from elsewhere (a
    model's name a log recorded, a ``!cmd``) shown as ``printable_line`` shows them."""
    parts: list[Part] = [(Text(f" {printable_line(info.model) or 'no model'}", style="bold"), 0)]
    if info.approval:
        style = "bold red" if info.approval == "auto" else "bold"
        parts.append((Text(f"approval {info.approval}", style=style), 1))
    if info.workspace:  # where tools run, before what they cost; left out early when narrow
        parts.append((Text(f"workspace {info.workspace}", style="bold"), 6))
    if info.context_window:
        share = 100 * info.context_tokens / info.context_window
        parts.append((Text(f"context {share:.0f}% of {_tokens(info.context_window)}"), 4))
    else:
        parts.append((Text(f"context {_tokens(info.context_tokens)} tokens"), 4))
    if info.spend:  # left out before the context figure
        parts.append((Text(info.spend), 5))
    ratio = "n/a" if info.cache_ratio is None else f"{100 * info.cache_ratio:.0f}%"
    parts.append((Text(f"cache hits {ratio}"), 7))
    busy, compaction = info.busy, info.compaction
    if busy and compaction and compaction.startswith(busy):  # a /compact: its progress says it
        busy, compaction = compaction, None  # once ("compacting… · compacting" it was)
    if compaction:
        parts.append((Text(compaction, style="bold yellow"), 3))
    if busy:
        parts.append((Text(printable_line(busy), style="italic"), 0))
    if info.busy and info.queued:
        parts.append((Text(f"{info.queued} queued", style="bold"), 1))
    key = cancel_key(info)
    if key is not None:
        parts.append((Text(key, style="italic"), 2))
    if info.trust:
        parts.append((Text(info.trust, style="dim"), 5))
    return parts


def status_text(info: StatusInfo, width: int | None = None) -> Text:
    """The bar's line, fitted to ``width`` columns (None: every part) by leaving out the
    highest ranks first."""
    parts = status_parts(info)
    if width is not None and width > 0:
        while len(parts) > 1 and _width(parts) > width:
            ranked = [part for part in parts if part[1] > 0]
            if not ranked:
                break
            parts.remove(max(ranked, key=lambda part: part[1]))
    text = Text(no_wrap=True, overflow="ellipsis")
    for i, (part, _) in enumerate(parts):
        text.append(SEPARATOR if i else "").append_text(part)
    return text


def _width(parts: list[Part]) -> int:
    return sum(part.cell_len for part, _ in parts) + len(SEPARATOR) * (len(parts) - 1)


def trust_label(workspace: Path, environ: Mapping[str, str] | None = None) -> str | None:
    """``project config trusted``/``untrusted`` (or changed since trusted, or untrusted and
    broken: ignored whole) when ``workspace`` has ``.dsh/config.toml``."""
    if not (workspace / ".dsh" / "config.toml").is_file():
        return None
    state = trust_state(workspace, environ)
    if state == "trusted":
        return "project config trusted"
    if not project_config_loads(workspace / ".dsh" / "config.toml"):  # untrusted: not applied
        return "project config untrusted and broken: ignored whole (see /warnings)"
    if state == "changed":
        return "project config changed since trusted: safety keys ignored (review it, dsh trust)"
    if state == "unpinned":
        return "project config trusted by an older dsh: safety keys ignored (review it, dsh trust)"
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
            self.refresh()

    def measure(self, controller: Controller) -> None:
        """Show the open session's context use and spend as they are now."""
        self.set(context_tokens=controller.context_tokens(), spend=spend_line(controller))

    def render(self) -> Text:
        return status_text(self.info, self.content_size.width)

    def on_resize(self, event: events.Resize) -> None:
        self.refresh()
