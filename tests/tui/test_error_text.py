"""A turn's internal error in the terminal UI: its note (``internal error: Type: message``), the
logged turn's note (``Turn failed: …``) and its ``/warnings`` row show the error's text as
``dsh.errors.error_line`` makes it — one line, a terminal escape as its escape, at most
``ERROR_LINE_CHARS`` characters — while the log's ``turn/end`` and the log record keep it whole.
So does the note of a ``DshError`` a command or a turn ends in (``error: …``): ``/resume`` of a
session that does not load, ``/model`` refused, a write the OS refused under ``/compact`` or a
turn."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.errors import ERROR_LINE_CHARS, ConfigError, StorageWriteError, error_line
from dsh.events import TurnEndEvent
from dsh.surface import Session
from dsh.tui import DshApp
from tests.hostile_errors import HOSTILE, assert_shown_as_error_line, unopenable_session
from tests.tui.conftest import SIZE, Rig, run_prompt, settle, submit
from tests.tui.test_warnings import BuggyProvider

MESSAGE = "\x1b[2J\x1b]0;owned\x07 a bug\nin the provider " + "and on " * 300


class HostileProvider(BuggyProvider):
    """A provider whose bug raises an error with a long text holding terminal escapes."""

    async def stream(self, request: Any, *, history: Any) -> Any:  # type: ignore[override]
        raise RuntimeError(MESSAGE)
        yield


def notes(app: Any) -> list[str]:
    return [block.cached_text for block in app.transcript.model.blocks if block.kind == "note"]


def test_a_turns_internal_error_is_shown_on_one_bounded_line_and_logged_whole(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    app = rig.app([], wrap_provider=lambda _: HostileProvider())
    shown = error_line(RuntimeError(MESSAGE))
    assert len(shown) == ERROR_LINE_CHARS and shown.startswith(
        "RuntimeError: \\x1b[2J\\x1b]0;owned\\x07 a bug in the provider and on"
    )

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await submit(pilot, "go")
            await settle(pilot, lambda: len(notes(app)) == 2 and not app.running)
            await settle(pilot, lambda: len(app.warnings.entries) == 1)

    with caplog.at_level(logging.ERROR, logger="dsh.tui"):
        asyncio.run(main())
    assert sorted(notes(app)) == sorted(
        [f"Turn failed: {error_line(MESSAGE)}", f"internal error: {shown}"]
    )
    (entry,) = app.warnings.entries
    assert entry.text == f"the turn failed: internal error: {shown}"
    for text in [*notes(app), entry.text]:
        assert "\n" not in text and "\x1b" not in text and text.endswith("…")
    # the log keeps the whole text: the session's turn/end, and the record its exception
    assert app.last_session_id is not None
    with Session.open(rig.store, app.last_session_id) as session:
        (end,) = session.of_type(TurnEndEvent)
    assert end.data.reason.error == MESSAGE
    (record,) = [r for r in caplog.records if r.name == "dsh.tui"]
    assert record.exc_info is not None and str(record.exc_info[1]) == MESSAGE


# ---- a DshError's note: ``error: `` and its text as ``error_line`` makes it --------------------


def error_notes(app: Any) -> list[str]:
    return [text for text in notes(app) if text.startswith("error: ")]


def test_a_session_that_cannot_be_resumed_is_said_on_one_bounded_line(rig: Rig) -> None:
    session_id, text = unopenable_session(rig.store, rig.workspace)
    app = rig.app([])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await submit(pilot, f"/resume {session_id}")
            await settle(pilot, lambda: bool(error_notes(app)))

    asyncio.run(main())
    (shown,) = error_notes(app)
    assert_shown_as_error_line(shown, text, "error: ")


def test_a_model_the_configuration_refuses_is_said_on_one_bounded_line(rig: Rig) -> None:
    options = rig.app([]).controller.options
    configured = options.route_factory
    assert configured is not None
    refused = f"no route for that model: {HOSTILE}"

    def route(model: str | None) -> Route:
        if model is not None:
            raise ConfigError(refused)
        return configured(None)

    app = DshApp(replace(options, route_factory=route))

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await submit(pilot, "/model other")
            await settle(pilot, lambda: bool(error_notes(app)))

    asyncio.run(main())
    (shown,) = error_notes(app)
    assert_shown_as_error_line(shown, refused, "error: ")


class RefusedWrite(StorageWriteError):
    """What the store raises when the OS refuses a write (a full disk)."""


@pytest.mark.parametrize("line", ["/compact", "go"])
def test_a_refused_write_under_compact_or_a_turn_is_said_on_one_bounded_line(
    rig: Rig, line: str
) -> None:
    """``/compact`` and a turn each end in a ``DshError`` of the store's (here its text holds a
    path someone named with escapes and a newline): the note shows it as ``error_line`` does."""
    app = rig.app([{"text": "hello"}])
    refused = f"cannot write {HOSTILE}: No space left on device"

    async def refuse(*args: Any) -> Any:
        raise RefusedWrite(refused)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await run_prompt(pilot, "hi")  # a session with something to compact
            app.controller.compact = refuse  # type: ignore[method-assign]
            app.controller.run_turn = refuse  # type: ignore[method-assign]
            await submit(pilot, line)
            await settle(pilot, lambda: bool(error_notes(app)) and not app.running)

    asyncio.run(main())
    (shown,) = error_notes(app)
    assert_shown_as_error_line(shown, refused, "error: ")
