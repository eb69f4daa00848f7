"""The real app fed raw terminal input the way its driver reads it (``TerminalInput``, then
``InputPacer``): a paste with colour codes lands in the composer whole and is sent with each
ESC as ``\\x1b``; keys typed while the UI starts reach the composer, spaces and enter included;
the reader never runs more than ``PACE`` events ahead of the composer."""

from __future__ import annotations

import asyncio
import os
import termios
import threading
import time
import tty
from typing import Any

from textual import events
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from dsh.tui.terminal_driver import PACE, InputPacer, enters_typed_ahead, waiting_input
from dsh.tui.terminal_input import PASTE_END, PASTE_START, TerminalInput
from tests.tui.conftest import SETTLE_TIMEOUT, SIZE, Rig, settle
from tests.tui.test_composer import finish, sent
from tests.tui.test_pilot import run

COLOURED = "line 0: h\u00e9llo \t tab \x1b[31m red\rline 1: x \x1b[31m red\rline 2: y\r"
"""What ``printf 'line 0: héllo \\t tab \\033[31m red\\n…'`` pasted in tmux sends."""


def test_a_pasted_colour_code_arrives_whole_in_the_composer_and_is_sent_as_its_escape(
    rig: Rig,
):
    app = rig.app([{"text": "Got the lines."}])

    async def body(pilot: Any) -> None:
        terminal = TerminalInput(app.post_message)
        raw = f"{PASTE_START}{COLOURED}{PASTE_END}"
        for at in range(0, len(raw), 7):  # as reads of a few bytes each
            terminal.feed(raw[at : at + 7])
        shown = "line 0: h\u00e9llo \t tab \\x1b[31m red\nline 1: x \\x1b[31m red\nline 2: y\n"
        await settle(pilot, lambda: app.prompt_box.text == shown)
        assert sent(app) == []  # nothing went before enter
        terminal.feed("\r")
        await settle(pilot, lambda: bool(sent(app)))
        await finish(pilot)
        assert sent(app) == [shown.rstrip("\n")]

    run(app, body)


def test_keys_typed_while_the_ui_starts_reach_the_composer_in_order(rig: Rig):
    app = rig.app([{"text": "Reading it all."}])

    async def main() -> None:
        # read from the terminal before the app has mounted anything: they wait in its queue
        TerminalInput(app.post_message).feed("a b c read everything please\r")
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: bool(sent(app)))
            await finish(pilot)
            assert sent(app) == ["a b c read everything please"]
            assert app.prompt_box.has_focus

    asyncio.run(main())


def test_the_reader_runs_at_most_pace_keys_ahead_of_the_composer(rig: Rig):
    app = rig.app([])
    keys = 3 * PACE + 5

    async def body(pilot: Any) -> None:
        posted: list[Message] = []

        def send(message: Message) -> None:
            posted.append(message)
            app.post_message(message)

        stopped = threading.Event()
        pacer = InputPacer(app, send, stopped)
        typist = threading.Thread(
            target=lambda: [pacer.post(events.Key("x", "x")) for _ in range(keys)], daemon=True
        )
        typist.start()
        # the app's loop is held here: nothing is handled, so the reader must stop at PACE
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while not pacer.waiting:
            assert time.monotonic() < deadline, "the reader never waited for the app"
            time.sleep(0.01)
        assert sum(isinstance(m, events.Key) for m in posted) == PACE
        await settle(pilot, lambda: not typist.is_alive())
        await settle(pilot, lambda: app.prompt_box.text == "x" * keys)
        stopped.set()

    run(app, body)


def test_enter_typed_before_the_ui_took_the_terminal_is_read_as_enter():
    """While dsh starts, the terminal is in its line mode, which turns enter into a line feed
    (ctrl+j to the UI); what it holds when the UI takes it was typed then."""
    leader, follower = os.openpty()
    try:
        os.write(leader, b"read it\r")  # the terminal's line mode makes it "read it\n"
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while waiting_input(follower) < len(b"read it\n"):  # the line discipline has it
            assert time.monotonic() < deadline, "the terminal never held the typed line"
            time.sleep(0.01)
        attributes = termios.tcgetattr(follower)
        attributes[tty.LFLAG] = LinuxDriver._patch_lflag(attributes[tty.LFLAG])
        attributes[tty.IFLAG] = LinuxDriver._patch_iflag(attributes[tty.IFLAG])
        termios.tcsetattr(follower, termios.TCSANOW, attributes)  # as the driver does
        typed_ahead = waiting_input(follower)
        assert typed_ahead == len(b"read it\n")
        os.write(leader, b"\n")  # ctrl+j, typed once the UI has the terminal
        data = b""
        while len(data) < typed_ahead + 1:
            data += os.read(follower, 1024)
    finally:
        os.close(leader)
        os.close(follower)
    posted: list[Message] = []
    TerminalInput(posted.append).feed(enters_typed_ahead(data, typed_ahead).decode())
    keys = [m.key for m in posted if isinstance(m, events.Key)]
    assert keys == ["r", "e", "a", "d", "space", "i", "t", "enter", "ctrl+j"]
