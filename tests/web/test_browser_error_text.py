"""A turn's error text in the page, in a real browser: the error toast and the transcript's
"Turn N failed" note show it as ``dsh.errors.error_line`` makes it (one line, what does not
print as its escape, at most ``ERROR_LINE_CHARS`` characters; as text, never markup), live and
drawn again from the log, which keeps the whole text; the page's ``errorLine`` (the
projection's mirror of ``error_line``) gives what Python gives. A turn that ends in a
``DshError`` (a provider refusing with 2,000 characters of hostile text) is toasted the same
way: the server's message is already that line."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.errors import ERROR_LINE_CHARS, ConfigError, error_line
from dsh.events import Event, TurnEndEvent
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.web import BackgroundServer, WebRuntime
from dsh.web.errors import API_MESSAGE_CHARS
from tests.hostile_errors import HOSTILE, assert_shown_as_error_line
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded, open_page, send, serve, view_rows
from tests.web.test_browser_warnings import failing_turn, stored_session, watching

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MESSAGE = "<img src=x onerror=window.pwned=1>\n\x1b]0;owned\x07\u202eno " + "and on " * 200
ALPHABET = [
    *"abcXYZ019 <>&'\"\\…é漢😀",
    *"\t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2003\u2028\u2029\u202f\u3000",  # white space
    *"\x00\x07\x1b\x7f\x9b\xad\u200b\u202e\u2066\ufeff\ue000\U000f0000",  # does not print
]


def texts(count: int) -> list[str]:
    """Strings of every kind of character ``error_line`` treats apart, some past the bound."""
    chosen = random.Random(20260105)
    return [
        "".join(chosen.choices(ALPHABET, k=chosen.choice([0, 1, 5, 40, 299, 300, 301, 420])))
        for _ in range(count)
    ]


def test_the_pages_error_line_is_pythons(browser: Any, tmp_path: Path) -> None:
    cases = texts(400)
    with serve(make_env(tmp_path)) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        shown: list[list[str]] = page.evaluate(
            """async (cases) => {
                const { errorLine } = await import('/s/projection.js');
                return cases.map((text) => [errorLine(text), errorLine(text, 12)]);
            }""",
            cases,
        )
        bounds = page.evaluate(
            """async () => {
                const { API_MESSAGE_CHARS, ERROR_LINE_CHARS } = await import('/s/projection.js');
                return [ERROR_LINE_CHARS, API_MESSAGE_CHARS];
            }"""
        )
    assert shown == [[error_line(text), error_line(text, 12)] for text in cases]
    assert bounds == [ERROR_LINE_CHARS, API_MESSAGE_CHARS]  # the toast cuts where the API does


def test_a_turns_error_is_one_bounded_escaped_line_in_the_toast_and_the_note(
    browser: Any, tmp_path: Path
) -> None:
    note = f"Turn 1 failed: {error_line(MESSAGE)}"
    with failing_turn(browser, tmp_path, MESSAGE) as (page, sid, _):
        toast = page.locator("#toast").text_content()
        assert toast == f"the turn failed: {error_line(RuntimeError(MESSAGE))}"
        assert toast.startswith(
            "the turn failed: RuntimeError: <img src=x onerror=window.pwned=1> "
            "\\x1b]0;owned\\x07\\u202eno and on"
        )
        page.wait_for_function(
            "() => window.dsh.view.allRows().some((r) => r.matches('.row.notice'))"
        )
        assert view_rows(page, ".row.notice") == [note]
        assert len(note) == len("Turn 1 failed: ") + ERROR_LINE_CHARS and note.endswith("…")
        page.reload()  # drawn again from the stored log
        first_page_loaded(page)
        assert view_rows(page, ".row.notice") == [note]
        assert page.locator("#log img, #toast img").count() == 0
        assert page.evaluate("() => window.pwned") is None
    with Session.open(JsonlStore(tmp_path / "home"), sid) as session:  # make_env's store
        (end,) = session.of_type(TurnEndEvent)
    assert end.data.reason.error == MESSAGE  # the log keeps it whole


class RefusingProvider:
    """A provider that refuses its call with a ``DshError`` whose text is long and hostile."""

    name = "scripted"

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        raise ConfigError(REFUSED)
        yield  # an async generator


REFUSED = f"the provider refused the call: {HOSTILE}"


def test_a_turn_that_ends_in_a_dsh_error_is_toasted_on_one_bounded_line(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    sid = stored_session(env, None)
    runtime = WebRuntime(env.settings, Route(RefusingProvider(), "scripted", env.window))
    with BackgroundServer(env.app(runtime)) as server, open_page(browser) as page:
        watching(page, f"{server.base_url}/?token={TOKEN}#s={sid}")
        page.evaluate("() => { window.dsh.toastMs = null; }")
        send(page, "go")
        page.locator("#toast").wait_for(state="visible")
        shown = page.locator("#toast").text_content()
        assert shown is not None
        assert_shown_as_error_line(shown, REFUSED)
