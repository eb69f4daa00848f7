"""dsh's warnings while the terminal UI runs: a toast each (from any thread), identical ones
coalesced, listed again by ``/warnings``; never written to the terminal the app draws on, and
still printed to stderr before the app starts, after it exits and while it closes."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

import dsh.tui.app_warnings
from dsh.cli.warning_lines import print_to_stderr
from dsh.events import Event
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.tui import DshApp
from dsh.tui.app_warnings import WarningLog, WarningRouter, WarningsApp
from dsh.tui.commands import HELP
from dsh.tui.picker import PickerApp, SessionPicker
from tests.tui.conftest import SIZE, Rig, settle, status_at_rest, submit
from tests.tui.test_pilot import lines_of, text_of
from tests.tui.test_sessions_picker import NOW, summary

CRASHED = "MCP server t crashed (its program exited) and was restarted (restart 1 of at most 3)"
PROBE = Path(__file__).with_name("warnings_probe.py")


def from_another_thread(level: int, message: str, times: int = 1) -> None:
    """Log ``message`` on ``dsh.tools.mcp`` from a thread of its own (as the MCP thread does)."""

    def log() -> None:
        for _ in range(times):
            logging.getLogger("dsh.tools.mcp").log(level, message)

    thread = threading.Thread(target=log)
    thread.start()
    thread.join()


def toasts(app: WarningsApp[Any]) -> list[tuple[str, str]]:
    """(severity, text) of each toast on screen."""
    shown = app.screen.query("Toast")
    return [
        ("error" if toast.has_class("-error") else "warning", toast.render().plain)  # type: ignore[attr-defined]
        for toast in shown
    ]


def run_with_toasts(app: DshApp, body: Any) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, lambda: app.ready)
            await body(pilot)

    asyncio.run(main())


@pytest.fixture
def long_toasts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Toasts stay up for the whole test, however slow the machine (a repeat while its toast is
    up only counts)."""
    monkeypatch.setattr(dsh.tui.app_warnings, "TOAST_SECONDS", 3600.0)


def test_a_warning_from_another_thread_shows_as_a_toast_and_again_in_slash_warnings(
    rig: Rig, long_toasts: None
):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        from_another_thread(logging.WARNING, CRASHED)
        await settle(pilot, lambda: len(toasts(app)) == 1)
        assert toasts(app) == [("warning", f"warning: {CRASHED}")]
        from_another_thread(logging.ERROR, "a pre-step hook failed: boom")
        await settle(pilot, lambda: len(toasts(app)) == 2)
        assert ("error", "error: a pre-step hook failed: boom") in toasts(app)

        await submit(pilot, "/warnings")
        await settle(pilot, lambda: "Warnings and errors since the UI started" in text_of(app))
        rows = [line for line in lines_of(app) if re.match(r"  \d\d:\d\d:\d\d ", line)]
        assert [row.split()[1:3] for row in rows] == [["warning:", "MCP"], ["error:", "a"]]

    run_with_toasts(app, body)


def test_a_warnings_terminal_escapes_show_as_escapes_in_its_toast_and_row(
    rig: Rig, long_toasts: None
):
    """Textual sends an escape in a toast's text to the terminal as is: the toast and the
    ``/warnings`` row show it as the stderr printer does."""
    app = rig.app([])
    hostile = "server said: \x1b]0;pwned\x07\x1b[31m\nred"
    shown = "server said: \\x1b]0;pwned\\x07\\x1b[31m red"

    async def body(pilot: Any) -> None:
        from_another_thread(logging.WARNING, hostile)
        await settle(pilot, lambda: len(toasts(app)) == 1)
        assert toasts(app) == [("warning", f"warning: {shown}")]
        await submit(pilot, "/warnings")
        await settle(pilot, lambda: "Warnings and errors since the UI started" in text_of(app))
        assert shown in text_of(app) and "\x1b" not in text_of(app)

    run_with_toasts(app, body)


class BuggyProvider:
    """A provider with a bug: its stream raises an exception dsh has no name for."""

    name = "scripted"

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        raise RuntimeError("a bug in the provider")
        yield  # an async generator


def test_a_turns_internal_error_is_noted_once_and_listed_without_a_toast(
    rig: Rig, long_toasts: None
):
    """The transcript notes the failure; the warnings list it in /warnings but show no toast
    for it; an error that is not shown otherwise still gets its toast."""
    app = rig.app([], wrap_provider=lambda _: BuggyProvider())
    failure = "internal error: RuntimeError: a bug in the provider"

    async def body(pilot: Any) -> None:
        await submit(pilot, "go")
        await settle(pilot, lambda: failure in text_of(app) and not app.running)
        await settle(pilot, lambda: len(app.warnings.entries) == 1)
        from_another_thread(logging.ERROR, "a pre-step hook failed: boom")
        await settle(pilot, lambda: len(app.warnings.entries) == 2 and bool(toasts(app)))
        assert toasts(app) == [("error", "error: a pre-step hook failed: boom")]  # that only

        await submit(pilot, "/warnings")
        await settle(pilot, lambda: "Warnings and errors since the UI started" in text_of(app))
        assert text_of(app).count(failure) == 2  # the note, and its row in /warnings

    run_with_toasts(app, body)


def test_identical_warnings_share_a_toast_and_a_counted_row_and_show_again_later(
    rig: Rig, long_toasts: None
):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        from_another_thread(logging.WARNING, "server t restarted", times=5)
        from_another_thread(logging.WARNING, "another   warning,\n on two lines")
        await settle(pilot, lambda: [e.count for e in app.warnings.entries] == [5, 1])
        await settle(pilot, lambda: len(toasts(app)) == 2)
        texts = [text for _, text in toasts(app)]
        assert texts == ["warning: server t restarted", "warning: another warning, on two lines"]
        await submit(pilot, "/warnings")
        await settle(pilot, lambda: "5 times, last at" in text_of(app))
        assert text_of(app).count("server t restarted") == 1
        assert "warning: another warning, on two lines" in text_of(app)

        app.warnings.entries[0].toast_until = 0.0  # as if its toast had gone
        from_another_thread(logging.WARNING, "server t restarted")
        await settle(pilot, lambda: len(toasts(app)) == 3)
        assert ("warning", "warning: server t restarted (6 times)") in toasts(app)

    run_with_toasts(app, body)


def test_slash_warnings_before_any_says_there_are_none_and_help_names_it(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/warnings")
        await settle(pilot, lambda: "No warnings or errors since the UI started." in text_of(app))

    run_with_toasts(app, body)
    assert "/warnings" in HELP


def test_nothing_reaches_stderr_while_the_app_runs_and_the_rest_prints_one_line_each(
    tmp_path: Path,
):
    """The real stderr printer (``ConsoleScript``) and a real run of the app (headless, so the
    app itself writes nothing there): fd 2 holds exactly the warnings from before the app
    started, while it closed and after it exited, one line each, and did not grow while it
    ran."""
    report, stderr = tmp_path / "report.json", tmp_path / "stderr.txt"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    with stderr.open("wb") as fd2:  # a file: its size says when something was written
        done = subprocess.run(
            [sys.executable, str(PROBE), str(tmp_path), str(report)],
            stdout=subprocess.DEVNULL,
            stderr=fd2,
            timeout=300,
            env=env,
            check=False,
        )
    printed = stderr.read_text()
    assert done.returncode == 0, printed
    seen = json.loads(report.read_text())
    assert seen["shown"] == ["warning: from the MCP thread while the app runs"]
    first_line = len("dsh: warning: before the app starts\n")
    assert seen["stderr_before"] == seen["stderr_while_running"] == first_line
    assert printed.splitlines() == [
        "dsh: warning: before the app starts",
        "dsh: warning: while the app closes",
        "dsh: warning: after the app exited",
    ]


def test_a_toast_and_the_warnings_list_snapshot(
    snap_compare, rig: Rig, long_toasts: None, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(dsh.tui.app_warnings, "clock", lambda at: "12:34:56")
    app = rig.app([])

    async def warn(pilot: Any) -> None:
        from_another_thread(logging.WARNING, CRASHED, times=2)
        await settle(pilot, lambda: len(toasts(app)) == 1)
        await submit(pilot, "/warnings")
        await settle(pilot, lambda: "2 times, last at" in text_of(app))
        await settle(pilot, lambda: status_at_rest(app))

    assert snap_compare(app, terminal_size=SIZE, run_before=warn)


def test_a_warning_while_the_resume_picker_shows_is_a_toast_and_the_ui_lists_it_after(
    rig: Rig, long_toasts: None
):
    """``dsh --resume``'s picker is an app of its own: a warning from another thread while it
    shows is a toast there, never a line from the stderr printer over it, and the UI that opens
    next lists it in ``/warnings`` (the two share one log)."""
    printed = io.StringIO()
    printer = logging.StreamHandler(printed)  # as the console script's stderr printer
    logging.getLogger("dsh").addHandler(printer)
    shown = WarningLog()
    rows = [
        summary("old", "older work", updated=NOW - 86_400_000),
        summary("new", "new", updated=NOW),
    ]
    picker = PickerApp(rows, now_ms=NOW, warnings=shown)

    async def pick() -> None:
        async with picker.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, lambda: isinstance(picker.screen, SessionPicker))
            from_another_thread(logging.WARNING, CRASHED)
            await settle(pilot, lambda: len(toasts(picker)) == 1)
            assert toasts(picker) == [("warning", f"warning: {CRASHED}")]
            await pilot.press("down", "enter")

    try:
        asyncio.run(pick())
    finally:
        logging.getLogger("dsh").removeHandler(printer)
    assert picker.return_value == "old"
    assert printed.getvalue() == ""
    assert [entry.text for entry in shown.entries] == [CRASHED]

    app = DshApp(rig.app([]).controller.options, warnings=shown)

    async def listed(pilot: Any) -> None:
        await submit(pilot, "/warnings")
        await settle(pilot, lambda: "Warnings and errors since the UI started" in text_of(app))
        assert f"warning: {CRASHED}" in " ".join(text_of(app).split())  # wrapped on screen

    run_with_toasts(app, listed)


def test_a_config_warning_the_app_never_showed_prints_after_it_once(capsys: Any) -> None:
    """The stderr printer prints each configuration warning once (``print_to_stderr``'s filter);
    silenced behind that filter while the app ran, a held line counted as printed, and one the
    app never showed (logged as it closed) was never printed after it either."""
    logger = logging.getLogger("dsh")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    print_to_stderr()  # binds the captured stderr
    try:
        with WarningRouter(cast(Any, None)).routed():
            logging.getLogger("dsh.config").warning("ignored tools.approval = auto in x.toml")
        assert capsys.readouterr().err == (
            "dsh: warning: ignored tools.approval = auto in x.toml\n"
        )
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]
