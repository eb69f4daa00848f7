"""The session picker: ``dsh --resume`` without an id, and ``/sessions`` in the UI.

One row per session, newest first: title, age (since its last event), size in turns, and
workspace. Typing filters the rows: each word typed must be in a session's title or id
(case aside); backspace widens again. Enter opens the highlighted session, esc closes the
picker without choosing.

In the UI a session recorded in another workspace cannot be opened (its tools would run in the
wrong directory; ``/resume`` refuses it too): the picker shows this workspace's sessions first,
then the others greyed, marked ``(elsewhere)`` and never highlighted, with a line saying
how to open one (``dsh --resume ID`` in its directory). On its own (``dsh --resume``), where a
session opens in its own workspace, every row can be chosen; a session this ``dsh`` cannot open
as it was started (a scripted session's ``--script`` not given, a workspace gone) is refused
where it is chosen: the picker stays, with the reason under the rows, so another can be chosen
(``refuse``).

A session another process holds for writing (a ``dsh web`` that opened it, another ``dsh``, a
``dsh run`` in its turn) is marked ``(busy)``, found as the rows are made: a ``stat`` of each
session's lock file, and a look at the few that record a holder
(``dsh.store.locking.holder_elsewhere``). Choosing one asks again, and one still held is refused
in place, the line under the rows naming its holder and what lets it go; one let go meanwhile
opens.

On its own the picker is an app of its own that handles dsh's warnings as the UI does
(``dsh.tui.app_warnings``): a toast each, none written over the screen, and kept for the UI's
``/warnings`` when it is given the UI's log.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from dsh.errors import printable_line
from dsh.store import EventStore
from dsh.store.locking import Holder, holder_words, session_holder
from dsh.transcript.listing import session_summaries
from dsh.transcript.titles import SessionSummary, trim_title
from dsh.tui.app_warnings import WarningLog, WarningsApp
from dsh.tui.workspace_shown import short_path

TITLE_WIDTH = 44
ELSEWHERE_MARK = " (elsewhere)"
"""After the title of a session of another workspace (in the title's column: never cut)."""
BUSY_MARK = " (busy)"
"""After the title of a session another process holds for writing (in the title's column)."""
WORKSPACE_WIDTH = 30


def age_text(then_ms: int, now_ms: int) -> str:
    """How long ago, coarsely: ``just now``, ``5 min``, ``3 h``, ``2 d``, ``6 wk``."""
    seconds = max(0, (now_ms - then_ms) // 1000)
    for unit, size in (("wk", 7 * 86400), ("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now"


def _short_path(path: str, width: int = WORKSPACE_WIDTH) -> str:
    path = short_path(Path(path))
    return path if len(path) <= width else "…" + path[-(width - 1) :]


def picker_row(
    summary: SessionSummary,
    now_ms: int,
    *,
    current: bool = False,
    elsewhere: bool = False,
    busy: bool = False,
) -> Text:
    """One line of the picker (the columns line up in a monospace terminal); ``elsewhere``:
    a session of another workspace, greyed; ``busy``: one another process holds, marked."""
    marker = (ELSEWHERE_MARK if elsewhere else "") + (BUSY_MARK if busy else "")
    title = fit_cells(
        trim_title(summary.title, TITLE_WIDTH - len(marker)), TITLE_WIDTH - len(marker)
    )
    turns = f"{summary.turns} turn{'' if summary.turns == 1 else 's'}"
    row = Text(no_wrap=True, overflow="ellipsis", style="dim" if elsewhere else "")
    row.append(title, style="bold" if current else "")
    row.append(marker, style="italic")
    row.append(" " * (TITLE_WIDTH - cell_len(title) - len(marker)))
    row.append(f"  {age_text(summary.updated_at, now_ms):>11}", style="dim")
    row.append(f"  {turns:>9}", style="dim")
    row.append(f"  {_short_path(printable_line(summary.cwd))}", style="dim")
    if current:
        row.append("  (open)", style="italic")
    return row


def fit_cells(text: str, width: int) -> str:
    """``text`` in at most ``width`` terminal cells (an emoji or a CJK character takes two),
    an ellipsis marking a cut, so the columns after it line up."""
    if cell_len(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        size = cell_len(char)
        if used + size > width - 1:
            break
        kept.append(char)
        used += size
    return "".join(kept).rstrip() + "…"


def newest_first(summaries: Sequence[SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries, key=lambda s: (s.updated_at, s.created_at, s.id), reverse=True)


def matches(summary: SessionSummary, typed: str) -> bool:
    """Whether every word of ``typed`` is in the session's title or id (case aside)."""
    where = f"{summary.title}\n{summary.id}".casefold()
    return all(word in where for word in typed.casefold().split())


ELSEWHERE = (
    "Greyed: sessions of other workspaces, whose tools would run in the wrong directory here. "
    "Open one from its own directory: dsh --resume ID."
)
BUSY = (
    "Busy: open for writing in another process (a dsh web, another dsh, a dsh run); choosing one "
    "says which, and what lets it go."
)


def edited_filter(typed: str, event: events.Key) -> str | None:
    """A picker's filter ``typed`` as ``event`` edits it (a character appended, backspace
    taking the last one off; the key then goes no further), None for any other key."""
    if event.key == "backspace":
        edited = typed[:-1]
    elif event.is_printable and event.character is not None:
        edited = typed + event.character
    else:
        return None
    event.stop()
    event.prevent_default()
    return edited


class SessionPicker(ModalScreen[str | None]):
    """Choose a session; dismisses with its id, or None (esc)."""

    DEFAULT_CSS = """
    SessionPicker {
        align: center middle;
    }
    SessionPicker > Vertical {
        width: 96%;
        height: 80%;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    SessionPicker #picker-title {
        height: 1;
    }
    SessionPicker #picker-filter {
        height: 1;
        margin-bottom: 1;
        color: $text-muted;
    }
    SessionPicker OptionList {
        height: 1fr;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    SessionPicker #picker-elsewhere {
        height: auto;
        color: $text-muted;
    }
    SessionPicker #picker-busy {
        height: auto;
        color: $text-muted;
    }
    SessionPicker #picker-refused {
        height: auto;
        color: $error;
    }
    """

    BINDINGS = [Binding("escape", "dismiss_none", "Close")]  # noqa: RUF012

    def __init__(
        self,
        summaries: Sequence[SessionSummary],
        *,
        current: str | None = None,
        now_ms: int | None = None,
        heading: str = "Resume a session",
        opens_here: Callable[[SessionSummary], bool] | None = None,
        refuse: Callable[[str], str | None] | None = None,
        holder: Callable[[str], Holder | None] | None = None,
    ) -> None:
        """``refuse``: why the session of an id cannot be opened (None: it can), asked when it
        is chosen; a reason keeps the picker open and shows under the rows. ``holder``: the
        other process holding the session of an id for writing (None: none does), asked of
        every row as the picker is made (those held are marked busy) and again of a choice (one
        held is refused, naming it)."""
        super().__init__()
        self.refuse = refuse
        self.holder = holder
        ordered = newest_first(summaries)
        self.elsewhere = frozenset(
            s.id for s in ordered if opens_here is not None and not opens_here(s)
        )
        """The sessions that cannot be opened from here (greyed, never chosen)."""
        self.summaries = [s for s in ordered if s.id not in self.elsewhere] + [
            s for s in ordered if s.id in self.elsewhere
        ]
        """Every session, in the picker's order: those that open here first, newest first."""
        self.busy: set[str] = set()
        """The sessions another process holds, as last looked at (marked ``(busy)``)."""
        if holder is not None:
            self.busy = {s.id for s in self.summaries if holder(s.id) is not None}
        self.current = current
        self.now_ms = now_ms if now_ms is not None else time.time_ns() // 1_000_000
        self.heading = heading
        self.typed = ""
        """What was typed to filter the rows."""

    @property
    def shown(self) -> list[SessionSummary]:
        """The rows the filter lets through, in the picker's order."""
        return [s for s in self.summaries if matches(s, self.typed)]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title(), id="picker-title", markup=False)
            yield Static(id="picker-filter", markup=False)
            yield OptionList(id="sessions")
            yield Static(ELSEWHERE, id="picker-elsewhere", markup=False)
            yield Static(BUSY, id="picker-busy", markup=False)
            yield Static(id="picker-refused", markup=False)

    def on_mount(self) -> None:
        self._refill()
        self.query_one(OptionList).focus()

    def _title(self) -> str:
        count = len(self.summaries)
        sessions = f"{count} session{'' if count == 1 else 's'}"
        if self.elsewhere:
            sessions = f"{count - len(self.elsewhere)} here, {len(self.elsewhere)} elsewhere"
        if self.busy:
            sessions += f", {len(self.busy)} busy"
        return f"{self.heading}: type to filter, enter opens, esc closes ({sessions})"

    def _refill(self) -> None:
        """Show the rows the filter lets through, the first one that can be opened
        highlighted; say what the filter is."""
        shown = self.shown
        options = self.query_one(OptionList)
        options.set_options(
            Option(
                self._row(s),
                id=s.id,
                disabled=s.id in self.elsewhere,
            )
            for s in shown
        )
        first = next((i for i, s in enumerate(shown) if s.id not in self.elsewhere), None)
        options.highlighted = first
        self.query_one("#picker-filter", Static).update(self._filter_line(len(shown)))
        greyed = any(s.id in self.elsewhere for s in shown)
        self.query_one("#picker-elsewhere", Static).display = greyed
        self.query_one("#picker-busy", Static).display = any(s.id in self.busy for s in shown)
        self._say_refused(None)  # said of a choice: the rows it was said over are gone

    def _row(self, summary: SessionSummary) -> Text:
        return picker_row(
            summary,
            self.now_ms,
            current=summary.id == self.current,
            elsewhere=summary.id in self.elsewhere,
            busy=summary.id in self.busy,
        )

    def _filter_line(self, shown: int) -> str:
        if not self.typed:
            return "Type to filter by title or id."
        typed = printable_line(self.typed)
        if not shown:
            return f"Filter: {typed} · no session matches · backspace widens"
        return f"Filter: {typed} · {shown} of {len(self.summaries)} · backspace widens"

    def on_key(self, event: events.Key) -> None:
        """A character narrows the rows, backspace widens them again."""
        typed = edited_filter(self.typed, event)
        if typed is not None and typed != self.typed:
            self.typed = typed
            self._refill()

    def on_paste(self, event: events.Paste) -> None:
        """A paste narrows the rows as typing it would (its first line)."""
        event.stop()
        pasted = event.text.split("\n", 1)[0]
        if pasted:
            self.typed += pasted
            self._refill()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        chosen = event.option.id
        assert chosen is not None  # every row has its session's id
        why = self._held(chosen)
        if why is None and self.refuse is not None:
            why = self.refuse(chosen)
        if why is None:
            self.dismiss(chosen)
            return
        self._say_refused(f"session {chosen} cannot be opened: {why} — choose another, or esc")

    def _held(self, chosen: str) -> str | None:
        """Why ``chosen`` cannot be opened if another process holds it now (its row's mark
        brought up to date either way)."""
        held = self.holder(chosen) if self.holder is not None else None
        if (held is not None) != (chosen in self.busy):
            self.busy.symmetric_difference_update({chosen})
            summary = next(s for s in self.summaries if s.id == chosen)
            self.query_one(OptionList).replace_option_prompt(chosen, self._row(summary))
            self.query_one("#picker-title", Static).update(self._title())
            shown = any(s.id in self.busy for s in self.shown)
            self.query_one("#picker-busy", Static).display = shown
        if held is None:
            return None
        return f"it is open for writing by {holder_words(held.pid, held.label)}"

    def _say_refused(self, line: str | None) -> None:
        refused = self.query_one("#picker-refused", Static)
        refused.update(printable_line(line) if line is not None else "")
        refused.display = line is not None

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class PickerApp(WarningsApp[str | None]):
    """The picker on its own (``dsh --resume`` without an id); returns the chosen id."""

    TITLE = "dsh"

    def __init__(
        self,
        summaries: Sequence[SessionSummary],
        *,
        now_ms: int | None = None,
        warnings: WarningLog | None = None,
        refuse: Callable[[str], str | None] | None = None,
        holder: Callable[[str], Holder | None] | None = None,
    ) -> None:
        super().__init__(warnings)
        self._summaries = summaries
        self._now_ms = now_ms
        self._refuse = refuse
        self._holder = holder

    def on_mount(self) -> None:
        picker = SessionPicker(
            self._summaries, now_ms=self._now_ms, refuse=self._refuse, holder=self._holder
        )
        self.push_screen(picker, callback=self.exit)


def pick_session(
    store: EventStore,
    warnings: WarningLog | None = None,
    refuse: Callable[[str], str | None] | None = None,
) -> str | None:
    """Show every stored session in the picker; the chosen id, or None if none was chosen.
    The warnings it shows are added to ``warnings`` (the UI's, which opens next); ``refuse``
    says why a chosen session cannot be opened (the picker then stays open, saying so), as it
    does of one another process holds for writing (marked busy)."""
    summaries = session_summaries(store)
    if not summaries:
        return None
    holder = functools.partial(session_holder, store)
    return PickerApp(summaries, warnings=warnings, refuse=refuse, holder=holder).run()
