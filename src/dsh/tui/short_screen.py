"""A terminal only a few rows high: what gives up its rows first, so the prompt stays usable.

Laid out as usual, the transcript, the status bar, the bordered prompt (three rows) and the
keys hint need six rows; below that Textual scrolled the screen, and under three rows the
prompt's text row went off the bottom: what was typed could not be seen. Here the rows go, in
order of need, to the find bar while it is open (it has the focus then), the prompt's first
text row, the status bar (model, context, "working… · esc cancels"), the draft's other rows,
the prompt's border (two rows), the keys hint, and the transcript last; the plan panel, when
there is one, shows only while the transcript keeps ``PLAN_LEAVES`` rows beside it. So as the
terminal shrinks the plan goes, the transcript yields, then the hint, then the border (the
prompt becomes a bare text row, still focused and typed into), then the status bar; nothing
is laid out past the bottom row. A draft taller than its rows scrolls inside the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import TextArea

PLAN_LEAVES = 8
"""The transcript rows the plan panel leaves at least (``dsh.tui.plan_panel``): below that the
panel is hidden."""
MAX_DRAFT_ROWS = 10
"""The prompt's rows of text at most (``PromptBox``'s ``max-height`` less its border)."""
BORDER_ROWS = 2
BORDERLESS = "-borderless"
"""The prompt's class when it has no room for its border (``PromptBox``'s CSS)."""


@dataclass(frozen=True, slots=True)
class Fit:
    """What a screen of a given height shows."""

    draft_rows: int
    """Rows of the prompt's text."""
    find: bool
    status: bool
    border: bool
    hint: bool
    transcript: int
    """Rows left to the transcript (0: hidden)."""


def fit(height: int, draft_rows: int, *, finding: bool) -> Fit:
    """Share ``height`` rows out in order of need; a part that does not fit is left out, and
    so is every part after it but the transcript, which takes what is left."""
    left = max(height, 0)
    wanted = min(max(draft_rows, 1), MAX_DRAFT_ROWS)

    def take(rows: int) -> bool:
        nonlocal left
        if rows > left:
            return False
        left -= rows
        return True

    find = finding and take(1)
    first = take(1)
    status = first and take(1)
    more = min(wanted - 1, left) if status else 0
    left -= more
    border = status and take(BORDER_ROWS)
    hint = border and take(1)
    return Fit(int(first) + more, find, status, border, hint, left)


def fit_to_height(screen: Screen[object], height: int) -> None:
    """Show and hide the main screen's parts for a terminal ``height`` rows high (on every
    resize, draft edit, and find bar opened or closed)."""
    try:
        prompt = screen.query_one("#prompt", TextArea)
        parts = {name: screen.query_one(f"#{name}") for name in ("transcript", "status", "hint")}
        finding = screen.query_one("#find").has_class("open")
    except NoMatches:  # not composed yet, or not the main screen
        return
    shown = fit(height, prompt.wrapped_document.height, finding=finding)
    plan = screen.query("#plan").first() if screen.query("#plan") else None
    plan_rows = getattr(plan, "rows", 0)
    if plan is not None:  # it takes the transcript's rows, while enough of them stay
        plan.display = plan_rows > 0 and shown.transcript - plan_rows >= PLAN_LEAVES
    _show(parts["transcript"], shown.transcript > 0, prompt)
    _show(parts["status"], shown.status, prompt)
    _show(parts["hint"], shown.hint, prompt)
    prompt.set_class(not shown.border, BORDERLESS)
    capped = shown.draft_rows < min(max(prompt.wrapped_document.height, 1), MAX_DRAFT_ROWS)
    rows = shown.draft_rows + (BORDER_ROWS if shown.border else 0)
    prompt.styles.max_height = rows if capped or not shown.border else None


def _show(part: Widget, visible: bool, prompt: Widget) -> None:
    part.display = visible
    if not visible and part.has_focus:  # the transcript, hidden while it had the focus
        prompt.focus()
