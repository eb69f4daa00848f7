"""The one card of a reply's calls that ``tools.max_calls_per_reply`` kept from running.

Collapsed, it says how many did not run and why, dim, with the tool names they gave
(``bash ×200, read_file ×68``); expanded (enter or a click, as any card), one row per call:
its tool and what it was about (``call_summary``, as a tool card's head says it). Rows are a
pure function of the item and the width (``dsh.tui.blocks``)."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style

from dsh.transcript import OverLimitItem, calls_by_name, over_limit_note
from dsh.transcript.call_summary import call_summary
from dsh.transcript.find import unrun_text as find_text
from dsh.tui.wrap import one_line, sanitize, wrap

Row = list[Segment]

DIM = Style(dim=True)
WARNING = Style(dim=True, color="yellow")
TOOL_NAME = Style(dim=True, bold=True, color="yellow")


def unrun_text(item: OverLimitItem) -> str:
    """What a find looks in (``dsh.transcript.find.unrun_text``: the note, the names and each
    call), as the screen shows text."""
    return sanitize(find_text(item))


def unrun_rows(item: OverLimitItem, width: int, *, expanded: bool) -> list[Row]:
    """The card's rows at ``width`` cells (no blank row after it)."""
    mark = Segment("▾ " if expanded else "▸ ", DIM)
    note = wrap(over_limit_note(item.asked, item.limit), max(1, width - 4))
    rows: list[Row] = [[Segment("  "), mark, Segment(note[0], WARNING)]]
    rows += [[Segment("    "), Segment(line, WARNING)] for line in note[1:]]
    names = sanitize(calls_by_name(_names(item)))
    if not expanded:
        rows.append([Segment("    └ ", DIM), Segment(one_line(names, max(1, width - 6)), DIM)])
        return rows
    rows.append([Segment("    "), Segment("not run", DIM)])
    for call in item.calls:
        name = sanitize(call.name) or "tool"
        head: Row = [Segment("      "), Segment(one_line(name, max(1, width - 6)), TOOL_NAME)]
        room = width - 6 - len(name) - 2
        summary = sanitize(call_summary(call.name, call.arguments))
        if room > 1 and summary:
            head += [Segment("  "), Segment(one_line(summary, room), DIM)]
        rows.append(head)
    return rows


def _names(item: OverLimitItem) -> list[str]:
    return [call.name for call in item.calls]
