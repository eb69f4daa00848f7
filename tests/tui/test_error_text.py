"""A turn's internal error in the terminal UI: its note (``internal error: Type: message``), the
logged turn's note (``Turn failed: …``) and its ``/warnings`` row show the error's text as
``dsh.errors.error_line`` makes it — one line, a terminal escape as its escape, at most
``ERROR_LINE_CHARS`` characters — while the log's ``turn/end`` and the log record keep it whole."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from dsh.errors import ERROR_LINE_CHARS, error_line
from dsh.events import TurnEndEvent
from dsh.surface import Session
from tests.tui.conftest import SIZE, Rig, settle, submit
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
