"""``dsh web``'s notification: while an approval waits in the page, the tab's title says so
(``● approval waiting · dsh``), so a page in a background tab is marked in the tab strip; it is
``dsh`` again once the approval is answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import make_env
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import open_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_the_title_is_marked_while_an_approval_waits(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo asked"}}]},
        {"text": "ran it"},
    ]
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        assert page.title() == "dsh"
        send(page, "run the command")
        approval = page.locator("#approvals .approval")
        approval.wait_for()
        page.wait_for_function("() => document.title === '● approval waiting · dsh'")
        approval.locator("button[data-answer='once']").click()
        wait_turn_over(page, "ran it")
        page.wait_for_function("() => document.title === 'dsh'")
