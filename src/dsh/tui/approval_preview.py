"""What the approval prompt shows of a call: all of it, never a head cut short.

``describe_call`` gives the whole call as people review it (a shell line, a coloured diff, the
arguments as JSON), with each run of ``BLANK_RUN`` or more blank lines shown as one marker line
(``⋯ 78 blank lines ⋯``) and each run of ``WIDE_GAP`` or more blank characters within a line as
``⋯ 5000 spaces ⋯``: padding cannot push what follows out of sight. Long lines wrap.
``Preview`` scrolls it within the prompt when it is taller than the room the screen leaves
(keys, ``SCROLLS``, and the mouse wheel), and ``more_hint`` is the line under it saying how
many lines are out of sight and how to reach them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.containers import VerticalScroll

from dsh.tools.planned_change import PlannedChange, planned_change
from dsh.tui.diffs import line_style, logged_diff
from dsh.tui.wrap import sanitize

COMMAND = Style(bold=True)
MARKER = Style(dim=True, italic=True)
BLANK_RUN = 3
"""This many blank lines in a row, or more, show as one marker line; one or two show as they are."""
WIDE_GAP = 64
"""This many blank characters in a row, or more, show as ``⋯ N spaces ⋯`` within their line: at
the start of a line, such a run would wrap into rows of nothing before what follows it."""
WILL_FAIL = "Will fail: "
"""How the prompt begins a file change that cannot happen (the tool's error follows)."""
FAILS = Style(color="yellow", bold=True)
FAILS_WHY = Style(color="yellow")
SCROLLS = {
    "up": "scroll_up",
    "down": "scroll_down",
    "pageup": "scroll_page_up",
    "pagedown": "scroll_page_down",
    "home": "scroll_home",
    "end": "scroll_end",
}
"""The keys that scroll the preview, and the ``VerticalScroll`` method each calls (no answer
key among them: o, y, a, d, n, esc)."""
_DRAWS_NOTHING = frozenset("\u115f\u1160\u2800\u3164\uffa0")
"""Characters a terminal draws as blank that Python counts as printable, not white space."""


_BLANK_CHARS = r"\s\u00ad\u115f\u1160\u180e\u200b-\u200d\u2060-\u2064\u2800\u3164\ufeff\uffa0"
"""What a run of blank characters is made of, as a regular expression's class."""
_GAP = re.compile(f"[{_BLANK_CHARS}]{{{WIDE_GAP},}}")


def looks_blank(line: str) -> bool:
    """True when ``line`` draws nothing: white space, invisible format characters (a zero-width
    space) and fillers only."""
    return all(c.isspace() or not c.isprintable() or c in _DRAWS_NOTHING for c in line)


def blank_marker(count: int) -> str:
    return f"⋯ {count} blank lines ⋯"


def gaps_shown(line: str, style: Style | str = "") -> Text:
    """``line`` in ``style``, each run of ``WIDE_GAP`` or more blank characters in it shown as
    a dim ``⋯ N spaces ⋯``."""
    if len(line) < WIDE_GAP:
        return Text(line, style=style)
    shown, at = Text(style=style), 0
    for gap in _GAP.finditer(line):
        shown.append(line[at : gap.start()])
        shown.append(f" ⋯ {len(gap.group())} spaces ⋯ ", style=MARKER)
        at = gap.end()
    shown.append(line[at:])
    return shown


def _runs(lines: list[str], blank: Callable[[str], str | None]) -> Iterator[tuple[int, int]]:
    """``(start, count)`` for each item shown: a run of ``BLANK_RUN`` or more blank lines of
    one kind (``blank`` says which, None for a line that is not blank) is one item, any other
    line one of its own."""
    i = 0
    while i < len(lines):
        j = i + 1
        kind = blank(lines[i])
        if kind is not None:
            while j < len(lines) and blank(lines[j]) == kind:
                j += 1
            if j - i < BLANK_RUN:
                j = i + 1
        yield i, j - i
        i = j


def _blank_line(line: str) -> str | None:
    return "" if looks_blank(line) else None


def _blank_diff_line(line: str) -> str | None:
    """A diff line's sign (``+``, ``-`` or a space) when the rest of it is blank."""
    return line[:1] if line[:1] in ("+", "-", " ") and looks_blank(line[1:]) else None


def describe_call(tool: str, args: dict[str, Any], workspace: Path | None = None) -> Text:
    """The call as people review it: a file edit as a coloured diff of the file (or, when it
    would fail, why, over its arguments: no diff that will not happen), a lone ``command`` as
    a shell line (``$ …``), anything else as indented JSON. All of it: runs of blank lines
    collapsed into a marker, nothing left out."""
    change = planned_change(tool, args, workspace)
    if change is not None:
        return _describe_change(change, args)
    if set(args) <= {"command", "timeout"} and isinstance(args.get("command"), str):
        return _command(sanitize(args["command"]).splitlines() or [""])
    return _arguments(args)


def _command(lines: list[str]) -> Text:
    rows = []
    for start, count in _runs(lines, _blank_line):
        lead = ("$ " if start == 0 else "  ", "dim")
        if count == 1:
            rows.append(Text.assemble(lead, gaps_shown(lines[start], COMMAND)))
        else:
            rows.append(Text.assemble(lead, (blank_marker(count), MARKER)))
    return Text("\n").join(rows)


def _arguments(args: dict[str, Any]) -> Text:
    text = json.dumps(args, indent=2, ensure_ascii=False)
    lines = sanitize(text).splitlines() or [""]
    rows = [
        gaps_shown(lines[start]) if count == 1 else Text(blank_marker(count), style=MARKER)
        for start, count in _runs(lines, _blank_line)
    ]
    return Text("\n").join(rows)


def _describe_change(change: PlannedChange, args: dict[str, Any]) -> Text:
    """A file change: ``Will fail: …`` and the arguments, or the diff under its note."""
    if change.fails is not None:
        why = Text.assemble((WILL_FAIL, FAILS), (sanitize(change.fails), FAILS_WHY))
        return Text("\n").join([why, Text("The call's arguments:", style="dim"), _arguments(args)])
    style = FAILS_WHY if change.elsewhere else "dim italic"  # a link: the file it leads to
    head = [Text(sanitize(change.note), style=style)] if change.note else []
    if change.lines is None:  # too large to diff either way
        return Text("\n").join([*head, _arguments(args)])
    diff = logged_diff(change.path, change.lines)
    rows = [
        gaps_shown(line, line_style(line, header=True) or "") for line in diff.lines[: diff.headers]
    ]
    body = list(diff.lines[diff.headers :])
    for start, count in _runs(body, _blank_diff_line):
        line = body[start]
        shown = line if count == 1 else line[:1] + blank_marker(count)
        rows.append(gaps_shown(shown, line_style(line) or ""))
    return Text("\n").join([*head, *(rows or [Text("(no change)", style="dim")])])


def more_hint(above: int, below: int) -> str:
    """The line under a preview taller than its box: how many of its lines are out of sight,
    and the keys that bring them in ("" when it all shows)."""
    if below and above:
        return f"↑ {above} lines above · … {below} more below: ↓ pgdn end, or the wheel"
    if below:
        return f"… {below} more lines: ↓ pgdn end, or the mouse wheel, show them"
    if above:
        return f"↑ {above} lines above: ↑ pgup home, or the wheel, scroll back"
    return ""


class Preview(VerticalScroll):
    """The call, in a box that scrolls when the screen cannot show it all; ``on_change`` is
    called whenever what it shows may have changed (its size, its scroll)."""

    def __init__(self, on_change: Callable[[], object], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._on_change = on_change

    def on_mount(self) -> None:
        self.watch(self, "scroll_y", self._changed, init=False)
        self.watch(self, "virtual_size", self._changed, init=False)

    def on_resize(self, event: events.Resize) -> None:
        self._changed()

    def _changed(self) -> None:
        self.call_after_refresh(self._on_change)

    def hidden_rows(self) -> tuple[int, int]:
        """How many of its rows are out of sight above and below."""
        top = round(self.scroll_y)
        return top, max(0, round(self.max_scroll_y) - top)

    def scroll_by_key(self, key: str) -> None:
        getattr(self, SCROLLS[key])(animate=False)
