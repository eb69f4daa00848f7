"""Find and follow, cost and context, in a real browser: the sidebar's titles, workspaces, ages
and states; find-in-session reaching compacted originals pages back; the header's model and cost
and the context panel showing the model's view as ``dsh.agent.context_report`` computes it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh.agent.billing import cost_report
from dsh.agent.context_report import context_report
from dsh.agent.spend import spend_of, spend_text
from dsh.events import TurnEnd, TurnEndReason, TurnStart
from dsh.store.jsonl import LOCK_NAME
from dsh.surface import Session
from tests.web.builders import long_session, user
from tests.web.conftest import AUTH, READ_NOTES, TOKEN, make_env
from tests.web.lock_holders import FlockHolder
from tests.web.pages import (
    ARTIFACTS,
    first_page_loaded,
    open_page,
    send,
    serve,
    wait_turn_over,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_the_sidebar_shows_title_workspace_age_and_state(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    for name in ("alpha", "beta", "gamma"):
        (tmp_path / name).mkdir()
    titled = long_session(env.store, tmp_path / "alpha", turns=2)
    held = long_session(env.store, tmp_path / "beta", turns=1)
    empty = Session.create(env.store, cwd=tmp_path / "gamma")
    empty.close()
    other = FlockHolder(env.store.session_dir(held) / LOCK_NAME)  # another writer holds it
    with (
        serve(env) as server,
        open_page(browser) as page,
    ):
        try:
            httpx.post(f"{server.base_url}/api/sessions/{titled}/resume", headers=AUTH)
            page.goto(f"{server.base_url}/?token={TOKEN}")
            page.wait_for_function(
                "() => document.querySelectorAll('#session-list .session-item').length === 3"
            )

            def item(sid: str) -> Any:
                return page.locator(f"#session-list .session-item[data-id='{sid}']")

            assert item(titled).locator(".session-title").inner_text() == (
                "Turn 1: look at module_1.py"
            )
            assert item(titled).locator(".where").inner_text() == str(tmp_path / "alpha")
            assert item(titled).locator(".state").inner_text() == "live here"
            assert item(held).locator(".state").inner_text() == (
                f"busy elsewhere (pid {other.pid})"
            )
            assert item(empty.id).locator(".session-title").inner_text() == "Untitled session"
            assert item(empty.id).locator(".state").inner_text() == "idle"
            assert re.fullmatch(
                r"just now|\d+ min ago", item(empty.id).locator(".age").inner_text()
            )
            page.fill("#session-search", "untitled")  # the filter sees titles too
            assert item(empty.id).is_visible() and item(titled).is_hidden()
            page.fill("#session-search", "")
            shot(page, "sidebar-titles-states")
        finally:
            other.crash()


def test_find_in_session_reaches_compacted_originals_pages_back(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    sid = long_session(env.store, env.workspace, turns=80, compact_after=70)
    with serve(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function("() => !window.dsh.loadingOlder")
        oldest = page.evaluate("() => window.dsh.oldestSeq")
        api = httpx.get(
            f"{server.base_url}/api/sessions/{sid}/find", params={"q": "Module 3"}, headers=AUTH
        ).json()
        hits = api["hits"]
        assert hits and all(h["seq"] < oldest for h in hits)  # none on the pages loaded yet

        page.keyboard.press("Control+f")
        assert page.is_visible("#find-bar")
        page.fill("#find-input", "Module 3")
        page.press("#find-input", "Enter")
        total = len(hits)
        page.wait_for_function(
            f"() => document.getElementById('find-status').textContent === '{total} of {total}'"
            " && document.querySelector('#log .row.find-current')"
        )
        current = page.locator("#log .row.find-current")
        assert hits[-1]["snippet"].split(".")[0] in current.inner_text()  # the newest first
        assert current.is_visible()
        assert page.evaluate("() => window.dsh.oldestSeq") <= hits[-1]["seq"]  # paged back
        assert page.evaluate("() => CSS.highlights.get('find').size") >= 1
        shot(page, "find-in-session")

        page.press("#find-input", "Enter")  # the next (older) match
        page.wait_for_function(
            f"() => document.getElementById('find-status').textContent === '{total - 1} of {total}'"
        )
        assert page.locator("#log .row.find-current").count() == 1
        assert hits[-2]["snippet"].split(".")[0] in current.inner_text()
        page.click("#find-next")  # and back to the newer one
        page.wait_for_function(
            f"() => document.getElementById('find-status').textContent === '{total} of {total}'"
        )
        page.fill("#find-input", "no such words anywhere")
        page.press("#find-input", "Enter")
        page.wait_for_function(
            "() => document.getElementById('find-status').textContent === 'No match'"
        )
        assert page.locator("#log .row.find-current").count() == 0
        page.press("#find-input", "Escape")
        assert page.is_hidden("#find-bar")


def test_find_highlights_the_match_after_text_that_lowercases_longer(
    browser: Any, tmp_path: Path
) -> None:
    """Lowercasing "İ" gives two characters: matching in the lowercased text put the highlight
    after the real match, or past the end of the text (an uncaught IndexSizeError)."""
    env = make_env(tmp_path)
    session = Session.create(env.store, cwd=env.workspace)
    session.append(TurnStart(turn=1))
    session.append(user("İİİİ fox", 1))
    session.append(user("İstanbul ISTANBUL foxes", 1))
    session.append(TurnEnd(turn=1, reason=TurnEndReason(kind="completed")))
    session.close()
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={session.id}")
        first_page_loaded(page)
        page.keyboard.press("Control+f")
        for query, status, marked in (
            ("fox", "2 of 2", ["fox"]),
            ("fox", "1 of 2", ["fox"]),
            ("istanbul", "1 of 1", ["ISTANBUL"]),  # "İstanbul" lowercases to "i̇stanbul"
        ):
            page.fill("#find-input", query)
            page.press("#find-input", "Enter")
            page.wait_for_function(
                "(s) => document.getElementById('find-status').textContent === s", arg=status
            )
            page.wait_for_function("() => CSS.highlights.has('find')")
            got = page.evaluate(
                "() => [...CSS.highlights.get('find')].map((range) => range.toString())"
            )
            assert got == marked


def test_the_header_and_context_panel_show_the_models_view(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = list(READ_NOTES)
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "Please read notes.txt")
        wait_turn_over(page, "The file has")
        sid = page.evaluate("() => window.dsh.sessionId")
        page.wait_for_function(
            "() => document.getElementById('model').textContent === 'scripted · scripted'"
        )

        page.click("#context-toggle")
        page.wait_for_selector("#context-panel .context-parts tr[data-part='tail']")
        served = httpx.get(f"{server.base_url}/api/sessions/{sid}/context", headers=AUTH).json()
        with Session.open(env.store, sid) as stored:
            expected = context_report(stored, default_window=env.window).public()
        usd = served["cost"]["usd"]  # the scripted model is priced as DeepSeek, as in /cost
        assert 0 < usd < 0.01
        with Session.open(env.store, sid) as stored:
            billed = cost_report(stored.events)
        spent = spend_text(spend_of(billed))  # /cost's figure, in the header
        assert spent is not None and spent.startswith(f"${billed.cost:.4f} · ")
        page.wait_for_function(
            "text => document.getElementById('cost').textContent === text", arg=spent
        )
        assert served["parts"] == expected["parts"]
        assert served["items"] == expected["items"]
        rows = page.locator("#context-panel .context-parts tbody tr")
        assert rows.evaluate_all("rows => rows.map(r => r.dataset.part)") == [
            "system",
            "tools",
            "stubs",
            "state",
            "tail",
        ]
        tail = next(p for p in served["parts"] if p["part"] == "tail")
        assert tail["items"] > 0
        page.wait_for_function(  # the panel refreshes after the turn's last stats
            "(n) => document.querySelectorAll('#context-panel .node.tail').length === n",
            arg=tail["items"],
        )
        used = served["usedTokens"]
        shown = f"{used / 1000:.1f}k" if used >= 1000 else str(used)
        assert re.fullmatch(
            rf"{re.escape(shown)} of 4\.0k tokens \(\d+%\), (provider-counted|estimated)",
            page.locator("#context-panel .context-total").inner_text(),
        )
        tools = next(p for p in served["parts"] if p["part"] == "tools")
        assert tools["items"] > 0 and tools["tokens"] > 0  # the agent logged its tool schemas
        shot(page, "context-panel")
        page.click("#context-close")
        assert page.is_hidden("#context-panel")
