"""What a screen reader is told, in a real browser, read from Chromium's own accessibility tree
(the DevTools protocol) and from the live regions' text after real key presses: Tab completion
in the composer (a textbox with list autocomplete: the candidates a list it controls and is
described by, each Tab's outcome said in a polite status), and the page's states — a turn or
``/compact`` running and ending, a pass's progress, an approval asked — said in another polite
status instead of only showing as pills. The page's other messages: a note the toast shows (an
``/undo --dry-run``'s plan) said politely through that status, which is in the page before it
comes, while an error stays an assertive alert; a session filter that matches nothing, and the
history's "Loading earlier history…" / "Beginning of the session", polite statuses that are in the
page while empty and say a text once, not again when it is put back unchanged."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from dsh.config import dsh_home
from dsh.surface import Session
from tests.helpers import append_chat_turn
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import (
    first_page_loaded,
    open_page,
    scroll_to_beginning,
    send,
    serve,
    wait_idle,
    wait_turn_over,
)
from tests.web.test_browser import READ_NOTES
from tests.web.test_browser_undo import edit_env, note_toast, open_new_session, toast_says

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BIDI = "notes\u202egnp.exe"


def ax_node(page: Any, selector: str) -> dict[str, Any]:
    """Chromium's accessibility node of the element ``selector`` names: its role, name,
    description, and properties by name (``live``, ``atomic``, ``autocomplete``, ``controls``
    as the ids)."""
    cdp = page.context.new_cdp_session(page)
    try:
        found = cdp.send(
            "Runtime.evaluate", {"expression": f"document.querySelector({selector!r})"}
        )
        tree = cdp.send(
            "Accessibility.getPartialAXTree",
            {"objectId": found["result"]["objectId"], "fetchRelatives": False},
        )
    finally:
        cdp.detach()
    node = tree["nodes"][0]
    properties = {}
    for prop in node.get("properties", []):
        value = prop["value"]
        related = value.get("relatedNodes")
        properties[prop["name"]] = (
            [r.get("idref") for r in related] if related is not None else value.get("value")
        )
    return {
        "role": node["role"]["value"],
        "name": node.get("name", {}).get("value", ""),
        "description": node.get("description", {}).get("value", ""),
        "ignored": node.get("ignored", False),  # out of the tree: a screen reader never hears it
        **properties,
    }


def said(page: Any, region: str) -> list[str]:
    """What the live region ``region`` holds, a line each (the last few said)."""
    lines: list[str] = page.evaluate(
        "(id) => [...document.getElementById(id).children].map((n) => n.textContent)", region
    )
    return lines


def wait_said(page: Any, text: str, count: int = 1) -> None:
    """Wait until the composer's status has said ``text`` ``count`` times in a row, last."""
    page.wait_for_function(
        """([text, count]) => {
            const lines = [...document.getElementById('composer-status').children]
                .map((n) => n.textContent);
            return lines.length >= count && lines.slice(-count).every((line) => line === text);
        }""",
        arg=[text, count],
    )


def record_sayings(page: Any) -> None:
    """Keep every line the page status says from now on in ``window.saidStates`` (the region
    itself keeps only the last few); called again, start the record afresh."""
    page.evaluate(
        """() => {
            window.saidStates = [];
            if (window.sayingsObserved) return;
            window.sayingsObserved = true;
            new MutationObserver((records) => {
                for (const r of records) {
                    for (const n of r.addedNodes) window.saidStates.push(n.textContent);
                }
            }).observe(document.getElementById('state-announcer'), { childList: true });
        }"""
    )


def test_tab_completion_is_a_textbox_with_list_autocomplete_and_says_each_outcome(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)  # its workspace holds notes.txt
    ws = env.workspace
    (ws / "notes-old.txt").write_text("")
    (ws / BIDI).write_text("")
    (ws / "many").mkdir()
    for n in range(10):
        (ws / "many" / f"f{n}.txt").write_text("")
    (dsh_home() / "commands").mkdir(parents=True)
    (dsh_home() / "commands" / "review.md").write_text("Review $ARGUMENTS.")
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        prompt = ax_node(page, "#prompt")
        assert prompt["role"] == "textbox" and prompt["autocomplete"] == "list"
        for region in ("#composer-status", "#state-announcer"):
            status = ax_node(page, region)
            assert (status["role"], status["live"], status["atomic"]) == ("status", "polite", False)
            assert status["relevant"] == "additions text"  # a new line is read, not a removed one

        # several: what they begin with is inserted; the list is said with its count
        page.locator("#prompt").press_sequentially("see @no")
        page.keyboard.press("Tab")
        wait_said(
            page,
            "Completed to @notes; 3 completions: @notes-old.txt, @notes.txt, @notes\\u202egnp.exe",
        )
        assert page.locator("#composer-hint").aria_snapshot() == (
            "- list:\n"
            '  - listitem: "@notes-old.txt"\n'
            '  - listitem: "@notes.txt"\n'
            '  - listitem: "@notes\\\\u202egnp.exe"'
        )
        prompt = ax_node(page, "#prompt")  # the list it controls, read as its description
        assert prompt["controls"] == ["composer-hint"] == prompt["describedby"]
        assert prompt["description"] == "@notes-old.txt @notes.txt @notes\\u202egnp.exe"
        # one: it is inserted and said; the hint goes
        page.keyboard.type(".")
        page.keyboard.press("Tab")
        wait_said(page, "Completed @notes.txt")
        assert page.locator("#composer-hint").is_hidden()
        assert ax_node(page, "#prompt")["description"] == ""

        # several with nothing more in common: Tab again moves on, and that is said
        page.fill("#prompt", "/co")
        page.locator("#prompt").focus()
        page.keyboard.press("Tab")
        wait_said(page, "3 completions: /compact, /context, /cost (Tab again moves on)")
        page.keyboard.press("Tab")
        page.wait_for_function("() => document.activeElement.id === 'send'")

        # past the listed ones: their count is said, and how many of them are named
        page.fill("#prompt", "@many/f")
        page.locator("#prompt").focus()
        page.keyboard.press("Tab")
        listed = ", ".join(f"@many/f{n}.txt" for n in range(8))
        wait_said(page, f"10 completions, the first 8: {listed} (Tab again moves on)")

        # nothing: said, and said again (a line of its own) after Esc, when Tab finds nothing again
        page.fill("#prompt", "see @zz")
        page.locator("#prompt").focus()
        for times in (1, 2):
            page.keyboard.press("Tab")
            wait_said(page, "Nothing to complete for @zz (Tab again moves on)", count=times)
            page.keyboard.press("Escape")
            page.locator("#composer-hint").wait_for(state="hidden")
        assert len(said(page, "composer-status")) == 3  # only the last few stay


def test_a_turn_its_approval_and_a_compaction_are_said_as_they_start_and_end(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo asked"}}]},
        {"text": "ran it"},
        *READ_NOTES,
    ]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        assert said(page, "state-announcer") == []  # an idle session's state is not said
        record_sayings(page)
        send(page, "run the command")
        approval = page.locator("#approvals .approval")
        approval.wait_for()
        group = ax_node(page, "#approvals .approval")
        assert group["role"] == "group"
        assert (
            page.locator("#approvals")
            .aria_snapshot()
            .startswith('- group "dsh wants to run bash:"')
        )
        approval.locator("button[data-answer='once']").click()
        wait_turn_over(page, "ran it")
        page.wait_for_function("() => window.saidStates.at(-1) === 'idle'")
        assert page.evaluate("() => window.saidStates") == [
            "running",
            "Approval needed: dsh wants to run bash",
            "idle",
        ]

        send(page, "read the notes")
        wait_turn_over(page, "The file has")
        page.wait_for_function("() => window.saidStates.length === 5")
        record_sayings(page)
        send(page, "/compact")
        page.wait_for_selector("#log .row.marker")
        wait_idle(page)
        page.wait_for_function("() => window.saidStates.at(-1) === 'idle'")
        states = page.evaluate("() => window.saidStates")
        assert "/compact running" in states, states
        progress = [s for s in states if s not in ("/compact running", "idle")]
        assert progress and all(
            re.fullmatch(r"compacting…|compacting · \d+ of \d+ regions", s) for s in progress
        ), states
        assert states.count("idle") == 1, states

        page.click("#find-toggle")  # the find bar's count is a status as well
        page.fill("#find-input", "notes")
        page.press("#find-input", "Enter")
        page.wait_for_function(
            "() => /^\\d+ of \\d+/.test(document.getElementById('find-status').textContent)"
        )
        found = ax_node(page, "#find-status")
        assert (found["role"], found["live"], found["atomic"]) == ("status", "polite", True)


def test_a_session_opened_while_its_turn_runs_says_so_once(browser: Any, tmp_path: Path) -> None:
    """Opening a running session says its state; switching away and back says it again; the
    switch itself says nothing (not "idle")."""
    env = make_env(tmp_path, approval="ask")
    env.script = [{"toolCalls": [{"name": "bash", "arguments": {"command": "echo wait"}}]}]
    with serve(env) as server, open_page(browser) as page:
        running = open_new_session(page, server.base_url)
        send(page, "wait for me")
        page.locator("#approvals .approval").wait_for()
        page.click("#new-session")
        page.wait_for_function(
            "(id) => window.dsh.info && window.dsh.sessionId !== id", arg=running
        )
        record_sayings(page)
        page.evaluate("(id) => { location.hash = `s=${id}`; }", running)
        page.wait_for_function("() => window.saidStates.length >= 2")
        assert page.evaluate("() => window.saidStates") == [
            "running",
            "Approval needed: dsh wants to run bash",
        ]
        page.click("#cancel")
        page.wait_for_function("() => window.saidStates.at(-1) === 'idle'")


def record_texts(page: Any, region: str) -> None:
    """Keep, in ``window.texts[region]``, the text of the element ``region`` each time its text
    is put (replaced, by the same text too: a screen reader would read it again)."""
    page.evaluate(
        """(id) => {
            window.texts = window.texts || {};
            window.texts[id] = [];
            const node = document.getElementById(id);
            new MutationObserver(() => { window.texts[id].push(node.textContent); })
                .observe(node, { childList: true, characterData: true, subtree: true });
        }""",
        region,
    )


def texts(page: Any, region: str) -> list[str]:
    result: list[str] = page.evaluate("(id) => window.texts[id]", region)
    return result


def polite_status_in_the_tree(page: Any, selector: str) -> None:
    node = ax_node(page, selector)
    assert (node["role"], node.get("live"), node.get("atomic"), node["ignored"]) == (
        "status",
        "polite",
        True,
        False,
    ), node


def test_an_undo_dry_run_note_is_said_politely_and_an_error_stays_an_alert(
    browser: Any, tmp_path: Path
) -> None:
    env = edit_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        send(page, "fix add")
        wait_turn_over(page, "fixed")
        page.wait_for_function("() => window.dsh.info.running === null")
        status = ax_node(page, "#state-announcer")  # in the tree before the note comes
        assert (status["role"], status["live"], status["ignored"]) == ("status", "polite", False)
        record_sayings(page)
        send(page, "/undo --dry-run")
        note = note_toast(page)
        assert note.startswith("Would undo turn ")
        page.wait_for_function("() => window.saidStates.length === 1")
        assert page.evaluate("() => window.saidStates") == [note]
        assert page.is_hidden("#toast")  # a note is the conversation's: no alarm, said once

        send(page, "/undo now")
        toast_says(page, "Usage: /undo")
        toast = ax_node(page, "#toast")
        assert (toast["role"], toast["live"], toast["ignored"]) == ("alert", "assertive", False)
        assert page.evaluate("() => window.saidStates.length") == 1  # the error is the alert's


def test_a_session_filter_that_matches_nothing_says_so_once(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "another answer"}]
    with Session.create(env.store, cwd=env.workspace) as stored:
        append_chat_turn(stored, "a question", "an answer")
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.locator("#session-list .session-item").wait_for()
        polite_status_in_the_tree(page, "#session-none")  # there while empty
        assert page.is_hidden("#session-none")  # and takes no room
        record_texts(page, "session-none")
        last = "(text) => window.texts['session-none'].at(-1) === text"
        page.fill("#session-search", "zzz")
        page.wait_for_function(last, arg="No session matches.")
        assert page.inner_text("#session-none") == "No session matches."
        page.fill("#session-search", "zzzz")  # still nothing: not said again
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "another question")  # it is stored: the list is loaded again, same filter
        page.wait_for_function("() => document.querySelectorAll('.session-item').length === 2")
        page.fill("#session-search", "")
        page.wait_for_function(last, arg="")
        page.fill("#session-search", stored.id[-6:] + " zzz")
        page.wait_for_function(last, arg="No session matches.")
        assert texts(page, "session-none") == ["No session matches.", "", "No session matches."]


def test_loading_older_history_and_its_beginning_are_said(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    with Session.create(env.store, cwd=env.workspace) as stored:
        for turn in range(1, 81):
            append_chat_turn(stored, f"question {turn}", f"answer {turn}")
    with serve(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={stored.id}")
        first_page_loaded(page)
        page.wait_for_function("() => !window.dsh.loadingOlder")
        assert page.evaluate("() => window.dsh.hasMore") is True
        polite_status_in_the_tree(page, "#history-status")
        record_texts(page, "history-status")
        scroll_to_beginning(page)
        said = texts(page, "history-status")
        assert said[0] == "Loading earlier history…" and said[-1] == "Beginning of the session"
        assert set(said) <= {"Loading earlier history…", "", "Beginning of the session"}
        assert all(a != b for a, b in pairwise(said)), said  # each said once
