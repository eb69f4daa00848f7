"""The terminal UI's bell (``ui.notify = "bell"``, the default): it rings when an approval
prompt starts waiting for you, and when a turn that ran at least ``ui.notify_after_seconds``
ends (completed or failed; not one you cancelled: you were there). A terminal turns the bell
into what it is set to (a sound, a flash, a mark on its tab or window, a desktop notification),
so someone who went to another window learns that dsh waits for them. ``ui.notify = "off"``:
no bell.

The turn's length is timed by the app's clock (``DshApp.clock``); an approval prompt is seen as
the screen stack shows it (Textual's ``screen_change_signal``), each prompt rung for once."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from dsh.config import UiSettings
from dsh.tui.approval import ApprovalScreen

CANCELLING = "cancelling…"
"""What the status bar says from a cancel until the turn has ended (``Work.cancel``, a quit)."""

if TYPE_CHECKING:
    from dsh.tui.app import DshApp


class Notifier:
    """The bell of one app."""

    def __init__(self, app: DshApp) -> None:
        self.app = app
        self._started: float | None = None
        self._watching = False
        self._asked: weakref.WeakSet[ApprovalScreen] = weakref.WeakSet()
        self.rung: list[str] = []
        """Why the bell rang, oldest first (``approval``, ``turn``)."""

    @property
    def settings(self) -> UiSettings:
        return self.app.controller.options.settings.ui

    def turn_started(self) -> None:
        """A turn starts: its length is timed from now, and approvals are watched for."""
        self._started = self.app.clock()
        if not self._watching:  # the app runs by now (a signal takes only running nodes)
            self._watching = True
            self.app.screen_change_signal.subscribe(self.app, self._screen_shown, immediate=True)

    def turn_ended(self) -> None:
        """The turn ended: ring if it ran long enough and was not cancelled (esc, ctrl+c, a
        quit: each says ``cancelling…`` until the turn has ended)."""
        started, self._started = self._started, None
        if started is None or self.app.busy == CANCELLING:
            return
        if self.app.clock() - started >= self.settings.notify_after_seconds:
            self.ring("turn")

    def _screen_shown(self, screen: Screen[Any]) -> None:
        if isinstance(screen, ApprovalScreen) and screen not in self._asked:
            self._asked.add(screen)
            self.ring("approval")

    def ring(self, why: str) -> None:
        if self.settings.notify == "bell":
            self.rung.append(why)
            self.app.bell()
