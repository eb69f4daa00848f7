"""Text from outside in a real browser: a session with hostile text in every field the page
shows (stored, and arriving live: the stream, approvals, /undo's notes, the composer's toast, a
warning), every view opened (cards and disclosures, the context panel, find, the session list)
and every link clicked. Nothing runs, nothing loads from elsewhere, no markup a message brought
stays in the page; the text itself is still shown, a bidi control as its escape (as the terminal
UI shows one: drawn, ``a\\u202egnp.exe`` reads ``aexe.png``)."""

from __future__ import annotations

import logging
import shlex
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dsh.tui.wrap import BIDI_CONTROLS, sanitize
from tests.web.conftest import TOKEN, make_env
from tests.web.hostile import (
    DIFF_LINES,
    EDIT_PATH,
    HOSTILE,
    PAYLOADS,
    RLO,
    WATCH_VIOLATIONS,
    hostile_session,
    problems,
    shown,
)
from tests.web.pages import first_page_loaded, open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import note_toast

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LINK_TEXTS = [
    "js-link",
    "JS-upper",
    "entity-link",
    "vb-link",
    "data-link",
    "ref-link",
    "title-link",
    "safe-link",
]
"""The labels of the hostile Markdown's links: each stays readable, whatever its URL was."""


def texts(page: Any, selector: str) -> list[str]:
    """The text of every element matching ``selector`` in the conversation's rows, the rows
    themselves included (parked ones too)."""
    found: list[str] = page.evaluate(
        """(sel) => window.dsh.view.allRows()
            .flatMap((row) => [row, ...row.querySelectorAll('*')].filter((e) => e.matches(sel)))
            .map((e) => e.textContent)""",
        selector,
    )
    return found


def open_everything(page: Any) -> None:
    page.evaluate(
        """() => window.dsh.view.allRows().forEach((row) => {
            row.querySelectorAll('details').forEach((d) => { d.open = true; });
        })"""
    )


def click_every_link(page: Any) -> int:
    """Click each link in the conversation (a link a reply holds opens a tab of its own);
    returns how many were clicked. The page stays where it is."""
    url = page.url
    links = page.locator("#log a")
    count: int = links.count()
    for i in range(count):
        link = links.nth(i)
        link.scroll_into_view_if_needed()
        if link.get_attribute("href") is None:
            link.click()
            continue
        with page.context.expect_page() as opened:
            link.click()
        opened.value.close()
    assert page.url == url
    return count


def find_every_hit(page: Any, query: str) -> int:
    """Search ``query`` and step through every hit (the newest first, then older ones);
    returns their number."""
    page.click("#find-toggle")
    page.fill("#find-input", query)
    page.press("#find-input", "Enter")
    page.wait_for_function(
        "() => /^(\\d+) of \\1$/.test(document.getElementById('find-status').textContent)"
    )
    total = int(page.inner_text("#find-status").split(" of ")[1])
    for step in range(total - 1, 0, -1):
        page.press("#find-input", "Enter")
        page.wait_for_function(
            "(s) => document.getElementById('find-status').textContent === s",
            arg=f"{step} of {total}",
        )
        page.wait_for_selector("#log .find-current")
    page.click("#find-close")
    return total


def test_every_field_of_a_stored_session_shows_hostile_text_as_text(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    workspace = env.workspace.joinpath(*HOSTILE.split("/"))  # each payload in the path
    workspace.mkdir(parents=True)
    sid = hostile_session(env.store, workspace)
    with serve(env) as server, open_page(browser) as page:
        page.context.route("https://example.com/**", lambda route: route.fulfill(body="ok"))
        page.add_init_script(WATCH_VIOLATIONS)
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        open_everything(page)
        assert problems(page) == []

        title = page.inner_text("#session-title")
        assert title.startswith(shown(f"{PAYLOADS[0]} {PAYLOADS[1]}"))
        item = page.locator(".session-item")
        assert item.locator(".where").text_content() == shown(str(workspace))
        assert item.locator(".session-title").text_content() == title

        (prompt, _) = texts(page, ".row.user .body")
        (reply, _) = texts(page, ".row.assistant .body")
        for text in (prompt, reply):
            for payload in (*PAYLOADS, *LINK_TEXTS):
                assert shown(payload) in text, payload
        (reasoning,) = texts(page, ".reasoning-text")
        assert reasoning.startswith(shown(HOSTILE))
        names = texts(page, ".tool-name")
        assert names == [shown(n) for n in ("bash", "edit_file", "write_file", "todo_write")] + [
            shown(f"mcp__{PAYLOADS[0]}"),
            shown(PAYLOADS[2]),
        ]
        assert texts(page, ".tool-output") == [shown(f"result {HOSTILE}")] * 6
        arguments = texts(page, ".tool-arguments")
        assert all(shown(HOSTILE) in text for text in arguments)
        assert texts(page, ".diff-path") == [shown(EDIT_PATH), shown(f"{HOSTILE}.html")]
        assert texts(page, ".diff-note") == [shown(DIFF_LINES[-1][1:].strip())]
        assert texts(page, ".todo-text") == [shown(HOSTILE)]
        assert texts(page, ".row.context summary") == [shown(f"Injected context · {HOSTILE}")]
        assert texts(page, ".marker-command") == [shown(f"/compact {HOSTILE}")]
        assert texts(page, ".summary-text") == [shown(f"summary {HOSTILE}")]
        notices = texts(page, ".row.notice")
        assert notices[-1] == shown(f"/{PAYLOADS[0]} {HOSTILE} — note {HOSTILE}")

        # the prompt's, the reply's, the context's: 9 links each and ![js-image], not loadable
        # here, shown as a link (its javascript: href dropped)
        assert click_every_link(page) == 3 * 10
        page.click("#context-toggle")
        page.wait_for_selector("#context-body .context-nodes li")
        previews = page.locator("#context-body .node-preview").all_text_contents()
        assert any(shown(PAYLOADS[0]) in p for p in previews)
        page.click("#context-close")
        assert find_every_hit(page, "onerror=window.__pwned=1") >= 10
        assert problems(page) == []


def from_a_thread(message: str) -> None:
    """A warning of the server's own (logged from a thread that serves no session)."""
    thread = threading.Thread(target=lambda: logging.getLogger("dsh.tools.mcp").warning(message))
    thread.start()
    thread.join()


def answer_approval(page: Any) -> str:
    """Allow the approval shown first; returns its text."""
    approval = page.locator("#approvals .approval").first
    approval.wait_for()
    said = approval.inner_text()
    aid = approval.get_attribute("data-id")
    approval.locator("button[data-answer='once']").click()
    page.locator(f"#approvals .approval[data-id='{aid}']").wait_for(state="detached")
    return said


STREAMED = """() => {
    window.__streamed = [];
    const tail = document.getElementById('live-tail');
    new MutationObserver(() => window.__streamed.push(tail.textContent))
        .observe(tail, { childList: true, characterData: true, subtree: true });
}"""
"""Keep what the live tail holds after every change (each delta frame is a task of its own)."""


def test_hostile_text_arriving_live_is_shown_as_text(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="ask")
    env.chunk_size = 16
    target = f"x {PAYLOADS[0]} {RLO}gnp.exe"
    command = f"echo {shlex.quote(HOSTILE)}"
    env.script = [
        {
            "text": f"first {HOSTILE}",
            "reasoning": HOSTILE,
            "toolCalls": [
                {"name": "bash", "arguments": {"command": command}},
                {"name": "write_file", "arguments": {"path": target, "content": f"{HOSTILE}\n"}},
            ],
        },
        {"text": f"done {HOSTILE}"},
    ]
    with serve(env) as server, open_page(browser) as page:
        page.add_init_script(WATCH_VIOLATIONS)
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.wait_for_function("() => window.dsh && window.dsh.warnings.socket?.readyState === 1")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        page.wait_for_function("() => window.dsh.socket?.readyState === 1")
        page.evaluate("() => { window.dsh.toastMs = null; window.dsh.warnings.toastMs = null; }")
        page.evaluate(STREAMED)
        send(page, f"{HOSTILE}</textarea>")
        said = sorted(answer_approval(page) for _ in range(2))
        wait_turn_over(page, "done ")

        assert said[0].startswith(f"dsh wants to run bash:\n$ {shown(command)}")
        assert said[1].startswith(f"dsh wants to run write_file:\n{shown(target)}")
        assert page.inner_text("#session-title").startswith(shown(PAYLOADS[0]))
        assert shown(f"{HOSTILE}</textarea>") in texts(page, ".row.user .body")[0]
        streamed = page.evaluate("() => window.__streamed")
        assert any(shown(RLO) in text for text in streamed)  # the reply, as it streamed
        assert texts(page, ".tool-output")[0] == shown(f"{HOSTILE}\n")

        send(page, "/undo --dry-run")
        assert shown(target) in note_toast(page)  # a note of the page's, not logged
        send(page, "/undo")
        page.wait_for_function(
            "() => window.dsh.view.allRows().some((r) => r.matches('.row.notice:not(.local)'))"
        )
        assert shown(target) in texts(page, ".row.notice:not(.local)")[-1]
        assert not (env.workspace / target).exists()

        send(page, f"/x{PAYLOADS[2]}")
        page.wait_for_function(
            "() => document.getElementById('toast').textContent.startsWith('Unknown command')"
        )
        assert page.inner_text("#toast").startswith('Unknown command /x"><svg')
        assert page.input_value("#prompt") == f"/x{PAYLOADS[2]}"  # kept, as typed

        from_a_thread(f"warning {HOSTILE}")
        page.wait_for_selector("#warning-toasts .warning-toast")
        toast = page.inner_text("#warning-toasts .toast-text")
        assert toast == shown(f"warning: warning {HOSTILE}")
        page.click("#warnings-toggle")
        assert shown(HOSTILE) in page.inner_text("#warnings-list")
        open_everything(page)
        assert problems(page) == []

        page.reload()  # the same session drawn from its log
        first_page_loaded(page)
        open_everything(page)
        assert find_every_hit(page, "onerror=window.__pwned=1") >= 5
        assert problems(page) == []


LONG = "\n".join(f"line {i}: {HOSTILE}" for i in range(300))


@pytest.mark.parametrize("tool", ["write_file", "mcp__t__fail"])
def test_an_approval_with_long_arguments_keeps_its_answers_in_the_window(
    browser: Any, tmp_path: Path, tool: str
) -> None:
    """300 lines of arguments (a file's content shown as a diff, an MCP tool's value in the
    key/value list): the approval's arguments scroll in a box of their own, its answers and the
    composer stay in the window, the page itself does not scroll."""
    env = make_env(tmp_path, approval="ask")
    if tool.startswith("mcp__"):
        pytest.importorskip("mcp")
        from dsh.config import McpSettings
        from tests.mcp.conftest import server as mcp_server

        env.settings = msgspec.structs.replace(
            env.settings, mcp=McpSettings(servers={"t": mcp_server()})
        )
        arguments = {"reason": LONG}
    else:
        arguments = {"path": "long.txt", "content": LONG}
    env.script = [{"toolCalls": [{"name": tool, "arguments": arguments}]}, {"text": "denied"}]
    try:
        with serve(env) as server, open_page(browser, height=600) as page:
            page.goto(f"{server.base_url}/?token={TOKEN}")
            page.click("#new-session")
            page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
            send(page, "go")
            approval = page.locator("#approvals .approval")
            approval.wait_for(timeout=120_000)  # an MCP server's start, on a loaded machine
            assert "line 299" in approval.locator(".tool-args-view").text_content()
            placed = page.evaluate(
                """() => {
                    const bottom = (s) => document.querySelector(s).getBoundingClientRect().bottom;
                    return {
                        answers: bottom('#approvals .approval .buttons'),
                        composer: bottom('#composer'),
                        window: window.innerHeight,
                        page: document.scrollingElement.scrollHeight,
                    };
                }"""
            )
            assert placed["answers"] <= placed["window"], placed
            assert placed["composer"] <= placed["window"], placed
            assert placed["page"] <= placed["window"], placed
            approval.locator("button[data-answer='deny']").click()
            wait_turn_over(page, "denied")
    finally:
        if tool.startswith("mcp__"):
            from dsh.tools.mcp import close_mcp_servers

            close_mcp_servers()


def test_the_page_shows_each_bidi_control_as_the_terminal_ui_does(
    browser: Any, tmp_path: Path
) -> None:
    controls = [chr(c) for c in BIDI_CONTROLS]
    with serve(make_env(tmp_path)) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.wait_for_function("() => window.dsh !== undefined")
        drawn = page.evaluate(
            """async (texts) => {
                const { shown } = await import('/s/dom.js');
                return texts.map(shown);
            }""",
            [*controls, f"a{RLO}b\u202cc", "plain <b>, é漢😀 \u200b\t\n", HIDDEN, SCOTLAND],
        )
    assert drawn[: len(controls)] == [ascii(c)[1:-1] for c in controls]
    assert drawn[len(controls) :] == [
        "a\\u202eb\\u202cc",
        "plain <b>, é漢😀 \u200b\t\n",
        sanitize(HIDDEN),  # each tag character as its escape, as the terminal UI shows it
        SCOTLAND,  # a flag stays a flag
    ]
    assert sanitize(HIDDEN) == "ok \\U000e0072\\U000e006d!"


HIDDEN = "ok \U000e0072\U000e006d!"
"""Text hiding "rm" in Unicode tag characters (invisible; a model reads them as letters)."""
SCOTLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"


def test_a_malformed_session_link_says_the_session_is_unavailable(
    browser: Any, tmp_path: Path
) -> None:
    """``#s=%E0`` (a link in a reply opens one in a tab of its own): the page used to stop on
    an uncaught URIError and stay blank; it asks the server, which knows no such session."""
    env = make_env(tmp_path)
    with serve(env) as server:
        context = browser.new_context()  # the refused request logs a console error: expected
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        try:
            page.goto(f"{server.base_url}/?token={TOKEN}#s=%E0%A4%A")
            page.wait_for_function("() => !document.getElementById('empty').hidden")
            assert page.inner_text("#session-title") == "Session unavailable"
            assert "session id" in page.inner_text("#empty")
        finally:
            context.close()
    assert errors == []
