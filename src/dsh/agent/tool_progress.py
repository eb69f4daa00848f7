"""What the tool calls running in this process print, for the faces to show while they run.

Each call a step runs gets an ``OutputTail`` (``dsh.tools.output_tail``) in its context; the
``bash`` tool feeds it what the command prints. ``RUNNING_OUTPUT`` (one per process) keeps them
by session id and the seq of the call's ``tool/call``, and tells its listeners (the terminal
UI's running cards, each web session's live stream) the lines of those that changed, at most
every ``REFRESH_SECONDS``: a command printing without pause costs the faces ten updates a
second, whatever it prints. It is transient and never logged: the step ends a call's tail once
the call's result is logged (``end``; its listeners hear ``()`` for it), so the transcript after
the call is what the log says, live or replayed. Listeners run on the event loop the calls run
on; one that is a bound method is held weakly (a closed app's cards do not stay).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable

from dsh.tools.output_tail import OutputTail
from dsh.tools.secrets import SecretPolicy

log = logging.getLogger("dsh.agent")

REFRESH_SECONDS = 0.1
"""The longest a change waits before the listeners hear it, and the least between two tellings."""

Lines = tuple[str, ...]
Listener = Callable[[str, dict[int, Lines]], None]
"""``(session id, {call seq: lines})``: the lines shown now of the calls that changed (``()``:
none, the call's tail ended)."""
Key = tuple[str, int]


class RunningOutput:
    """The tails of the calls running in this process (see above)."""

    def __init__(self) -> None:
        self._tails: dict[Key, OutputTail] = {}
        self._told: dict[Key, int] = {}
        """The version each tail had when its listeners were last told."""
        self._listeners: list[Callable[[], Listener | None]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def begin(self, session_id: str, call_seq: int, secrets: SecretPolicy) -> OutputTail:
        """The tail of the call logged at ``call_seq`` in ``session_id``, masking ``secrets``."""
        key = (session_id, call_seq)
        tail = OutputTail(secrets, self._changed)
        self._tails[key] = tail
        self._told[key] = 0
        return tail

    def end(self, session_id: str, call_seq: int) -> None:
        """The call's result is logged (or its step ended without one): its tail goes."""
        key = (session_id, call_seq)
        tail = self._tails.pop(key, None)
        told = self._told.pop(key, 0)
        if tail is not None and told:
            self._tell(session_id, {call_seq: ()})

    def lines(self, session_id: str) -> dict[int, Lines]:
        """The lines shown now of each call of ``session_id`` that printed (a page joining)."""
        shown = {}
        for (session, seq), tail in self._tails.items():
            if session == session_id and tail.version and (lines := tail.lines()):
                shown[seq] = lines
        return shown

    def watch(self, listener: Listener) -> Callable[[], None]:
        """Tell ``listener`` of every change from now on; returns the way to stop."""
        held: Callable[[], Listener | None]
        if hasattr(listener, "__self__") and hasattr(listener, "__func__"):
            held = weakref.WeakMethod(listener)
        else:
            held = lambda: listener  # noqa: E731

        def stop() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(held)

        self._listeners.append(held)
        return stop

    def _changed(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # fed outside an event loop: nothing would tell it later
            self._due()
            return
        if self._timer is None or self._timer_loop is not loop:  # (a loop gone: its never runs)
            self._timer, self._timer_loop = loop.call_later(REFRESH_SECONDS, self._due), loop

    def _due(self) -> None:
        self._timer = None
        changed: dict[str, dict[int, Lines]] = {}
        for key, tail in self._tails.items():
            if tail.version != self._told[key]:
                self._told[key] = tail.version
                changed.setdefault(key[0], {})[key[1]] = tail.lines()
        for session_id, lines in changed.items():
            self._tell(session_id, lines)

    def _tell(self, session_id: str, lines: dict[int, Lines]) -> None:
        for held in list(self._listeners):
            listener = held()
            if listener is None:
                with contextlib.suppress(ValueError):
                    self._listeners.remove(held)
                continue
            try:
                listener(session_id, lines)
            except Exception:  # a face's bug must not fail the command
                log.exception("a listener of running tool output failed")


RUNNING_OUTPUT = RunningOutput()
