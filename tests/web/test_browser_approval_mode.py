"""``/approval`` typed in the page's composer, in a real browser: it names the session's
approval mode and changes it in the terminal UI's words (a note, the draft cleared), an unknown
mode is refused in one line (an error, the draft kept), and the header shows the mode whenever
it is not ``ask`` (``auto`` marked), also in another page watching the session and after a
reload; under ``auto`` a bash call runs with no approval asked. The page refuses an unknown mode
itself, word for word as the server and the terminal UI do (``chosen_mode``'s line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.agent.approval_command import chosen_mode
from dsh.errors import UsageError
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded, open_page, send, serve, wait_turn_over
from tests.web.test_approval_mode_api import ASKS, AUTO, ask_env, tool_results
from tests.web.test_browser_error_text import texts
from tests.web.test_browser_undo import note_toast, open_new_session, toast_says

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def pill(page: Any) -> str | None:
    """The header's approval mode as shown (None: hidden), with ``!`` when marked as auto."""
    shown: str | None = page.evaluate(
        """() => {
            const box = document.getElementById('approval-mode');
            if (box.hidden || box.getClientRects().length === 0) return null;
            return box.textContent + (box.classList.contains('auto') ? '!' : '');
        }"""
    )
    return shown


def wait_pill(page: Any, text: str | None) -> None:
    page.wait_for_function(
        """(text) => {
            const box = document.getElementById('approval-mode');
            return text === null ? box.hidden : !box.hidden && box.textContent === text;
        }""",
        arg=text,
    )


def test_approval_in_the_composer_names_and_changes_the_mode_and_the_header_shows_it(
    browser: Any, tmp_path: Path
) -> None:
    env = ask_env(tmp_path, "echo unasked")
    with serve(env) as server, open_page(browser) as page, open_page(browser) as watcher:
        sid = open_new_session(page, server.base_url)
        watcher.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(watcher)
        assert pill(page) is None

        send(page, "/approval")
        assert note_toast(page) == ASKS
        assert page.input_value("#prompt") == ""
        assert pill(page) is None

        send(page, "/approval maybe")
        toast_says(page, "/approval takes")
        assert page.locator("#toast").inner_text() == (
            "/approval takes ask, auto or read-only, not 'maybe'."
        )
        assert page.get_attribute("#toast", "role") == "alert"
        assert page.input_value("#prompt") == "/approval maybe"  # kept, to mend

        send(page, "/Approval auto")
        assert note_toast(page) == AUTO
        assert page.input_value("#prompt") == ""
        assert pill(page) == "approval auto!"
        wait_pill(watcher, "approval auto")  # the session's other page heard it
        assert pill(watcher) == "approval auto!"

        send(page, "run it")
        wait_turn_over(page, "All done.")
        assert page.locator("#approvals .approval").count() == 0
        assert tool_results(env, sid) == ["unasked"]

        page.reload()
        first_page_loaded(page)
        assert pill(page) == "approval auto!"  # from the session's info
        send(page, "/approval read-only")
        wait_pill(page, "approval read-only")
        assert pill(page) == "approval read-only"  # not auto: not marked
        send(page, "/approval ask")
        wait_pill(page, None)
        wait_pill(watcher, None)


def refusal(arg: str) -> str:
    with pytest.raises(UsageError) as refused:
        chosen_mode(arg)
    return str(refused.value)


def test_the_pages_refusal_of_an_unknown_mode_is_the_commands(browser: Any, tmp_path: Path) -> None:
    quoting = ["it's", 'say "no"', "both ' and \"", "back\\slash", "tab\there", "Auto", "ask "]
    cases = [*quoting, *(text for text in texts(300) if text)]
    with serve(make_env(tmp_path)) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        shown: list[str] = page.evaluate(
            """async (cases) => {
                const { approvalRefusal } = await import('/s/composer.js');
                return cases.map((text) => approvalRefusal(text));
            }""",
            cases,
        )
    assert shown == [refusal(text) for text in cases]
