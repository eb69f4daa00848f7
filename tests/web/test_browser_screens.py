"""The page as a product, in a real browser: every screen width, tool calls rendered as diffs,
checklists and commands, and the state the page shows when sessions change."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.builders import long_session
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import (
    ARTIFACTS,
    first_page_loaded,
    reveal,
    scroll_to_beginning,
    send,
    serve,
    stored_events,
)
from tests.web.pages import wait_idle as page_idle

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LONG_WORD = "x" * 3000


@contextlib.contextmanager
def open_page(browser: Any, width: int, height: int = 800, allow: str = "\0") -> Iterator[Any]:
    """A fresh page of the given viewport; fails the test on any script or console error (but
    console errors containing ``allow``)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    try:
        yield page
    finally:
        context.close()
    assert [e for e in errors if allow not in e] == []


def box(page: Any, selector: str) -> dict[str, float]:
    found: dict[str, float] | None = page.locator(selector).bounding_box()
    assert found is not None, f"{selector} is not rendered"
    return found


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


# ---- every screen ---------------------------------------------------------------------------


@pytest.mark.parametrize("width", [390, 768, 1280])
def test_the_layout_fits_the_screen_and_a_long_word_wraps(
    browser: Any, tmp_path: Path, width: int
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": f"Here it is: {LONG_WORD} and the end."}]
    with serve(env) as server, open_page(browser, width) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        narrow = width <= 768
        # a narrow screen starts with the session list folded away; a wide one shows it
        assert page.locator("#sidebar").is_visible() is not narrow
        if narrow:
            page.click("#sidebar-toggle")
            assert page.locator("#sidebar").is_visible()
            assert box(page, "#sidebar")["width"] <= 0.86 * width
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        assert page.locator("#sidebar").is_visible() is not narrow  # the drawer closed itself
        send(page, f"say {LONG_WORD}")
        page_idle(page)
        page.wait_for_selector("#log .row.assistant")

        # nothing widens the page: the word wraps inside the conversation column
        sizes = page.evaluate(
            """() => {
                const c = document.getElementById('conversation');
                return { page: document.documentElement.scrollWidth, view: window.innerWidth,
                         conv: c.scrollWidth, convClient: c.clientWidth };
            }"""
        )
        assert sizes["page"] <= sizes["view"], sizes
        assert sizes["conv"] <= sizes["convClient"], sizes

        # the conversation column gets the width there is (at most its 920 px measure)
        sidebar = 0 if narrow else 260
        padding = 24 if narrow else 48
        column = box(page, "#log")["width"]
        expected = min(920, width - sidebar - padding)
        assert expected - 20 <= column <= expected, (column, expected)
        reply = box(page, "#log .row.assistant")
        assert reply["width"] <= column + 1

        # the composer is usable: wide, tall enough, on screen, and it takes text
        prompt = box(page, "#prompt")
        assert prompt["width"] >= 0.6 * (width - sidebar), prompt
        assert prompt["height"] >= 40
        assert prompt["y"] + prompt["height"] <= 800
        assert box(page, "#send")["x"] + box(page, "#send")["width"] <= width
        page.fill("#prompt", "typed")
        assert page.input_value("#prompt") == "typed"
        shot(page, f"layout-{width}")

        # the sidebar folds away and comes back on every screen
        page.click("#sidebar-toggle")
        assert page.locator("#sidebar").is_visible() is narrow
        assert page.get_attribute("#sidebar-toggle", "aria-expanded") == str(narrow).lower()
        if not narrow:  # folded: the column takes the freed room
            assert box(page, "#log")["width"] == pytest.approx(min(920, width - 48), abs=20)
        shot(page, f"layout-{width}-toggled")


COVERS = """([x, y, selector]) => !!document.elementFromPoint(x, y)?.closest(selector)"""


@pytest.mark.parametrize("width", [390, 768, 1280])
def test_the_composer_is_a_layer_of_its_own_under_the_drawer_and_the_panel(
    browser: Any, tmp_path: Path, width: int
) -> None:
    """The composer is composited on its own (an opaque layer a keystroke repaints without the
    conversation's): it still sits at the bottom of the column under the conversation, takes
    keys, and the drawer and the context panel still cover it."""
    env = make_env(tmp_path)
    sid = long_session(env.store, env.workspace, turns=12)
    with serve(env) as server, open_page(browser, width) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        style = page.evaluate(
            "() => { const s = getComputedStyle(document.getElementById('composer'));"
            " return [s.willChange, s.backgroundColor,"
            " getComputedStyle(document.body).backgroundColor]; }"
        )
        assert style[0] == "transform"
        assert style[1] == style[2]  # opaque, the page's own background
        composer, column = box(page, "#composer"), box(page, "#main")
        assert composer["y"] + composer["height"] == pytest.approx(800, abs=1)
        assert composer["x"] == pytest.approx(column["x"], abs=1)
        assert composer["width"] == pytest.approx(column["width"], abs=1)
        conversation = box(page, "#conversation")
        assert conversation["y"] + conversation["height"] <= composer["y"] + 0.5
        middle = composer["y"] + composer["height"] / 2
        page.focus("#prompt")
        page.keyboard.type("typed on its own layer")
        assert page.input_value("#prompt") == "typed on its own layer"
        assert page.evaluate(COVERS, [composer["x"] + 40, middle, "#prompt"])
        shot(page, f"composer-{width}")

        page.click("#context-toggle")
        page.wait_for_selector("#context-panel .context-parts tr[data-part='tail']")
        assert page.evaluate(COVERS, [width - 20, middle, "#context-panel"])
        shot(page, f"composer-{width}-panel")
        page.click("#context-close")
        assert page.evaluate(COVERS, [width - 60, middle, "#composer"])
        if width <= 768:  # the drawer slides over the composer
            page.click("#sidebar-toggle")
            assert page.evaluate(COVERS, [20, middle, "#sidebar"])
            shot(page, f"composer-{width}-drawer")


# ---- tool calls as diffs, checklists and commands ---------------------------------------------

XSS = '<img src=x onerror="window.pwned=1">'
TOOL_SCRIPT = [
    {
        "toolCalls": [
            {
                "name": "edit_file",
                "arguments": {
                    "path": "notes.txt",
                    "old": "line 2: the quick brown fox\nline 3: the quick brown fox\n",
                    "new": "line 2: the quick brown fox\nline 3: the slow red fox\nline 3b: new\n",
                },
            },
            {
                "name": "write_file",
                "arguments": {"path": "page.html", "content": f"<p>hi</p>\n{XSS}\n"},
            },
            {
                "name": "todo_write",
                "arguments": {
                    "todos": [
                        {"content": "read the notes", "status": "completed"},
                        {"content": "fix the fox", "status": "in_progress"},
                        {"content": XSS, "status": "pending"},
                    ]
                },
            },
            {"name": "bash", "arguments": {"command": "echo from-bash"}},
            {"name": "list_dir", "arguments": {"path": ".", "note": XSS}},
        ]
    },
    {"text": "done"},
]


def test_tool_calls_render_as_diffs_checklists_commands_and_key_values(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = list(TOOL_SCRIPT)
    with serve(env) as server, open_page(browser, 1280, height=1400) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "edit things")
        page_idle(page)
        page.wait_for_selector("#log .row.assistant")
        cards = page.locator("#log .row.tool details.tool-card")
        assert cards.count() == 5
        for i in range(5):
            cards.nth(i).locator("summary").first.click()

        # edit_file: the file's diff, one line removed and two added, with context around them
        edit = page.locator("#log .row.tool[data-call]").nth(0)
        assert edit.locator(".diff-hunk").inner_text() == "@@ −1,7 +1,8 @@"
        assert edit.locator(".diff-path").inner_text() == "notes.txt"
        assert edit.locator(".diff-added").inner_text() == "+2"
        assert edit.locator(".diff-removed").inner_text() == "−1"
        assert edit.locator(".diff-line.del .diff-code").all_inner_texts() == [
            "line 3: the quick brown fox"
        ]
        assert edit.locator(".diff-line.add .diff-code").all_inner_texts() == [
            "line 3: the slow red fox",
            "line 3b: new",
        ]
        assert edit.locator(".diff-line.ctx .diff-code").all_inner_texts() == [
            f"line {i}: the quick brown fox" for i in (0, 1, 2, 4, 5, 6)
        ]
        kinds = edit.locator(".diff-line").evaluate_all("(rows) => rows.map((r) => r.className)")
        ctx, changed = ["diff-line ctx"] * 3, ["diff-line del", "diff-line add", "diff-line add"]
        assert kinds == ctx + changed + ctx
        colours = edit.locator(".diff-line").evaluate_all(
            "(rows) => rows.map((row) => getComputedStyle(row).backgroundColor)"
        )
        assert len({colours[0], colours[3], colours[4]}) == 3  # context, removed, added differ
        assert not edit.locator(".raw-json pre").is_visible()
        edit.locator(".raw-json > summary").click()
        assert '"old": "line 2' in edit.locator(".raw-json pre").inner_text()

        # write_file: the new content as added lines, syntax-coloured, the markup inert
        write = page.locator("#log .row.tool[data-call]").nth(1)
        assert write.locator(".diff-line.add .diff-code").all_inner_texts() == ["<p>hi</p>", XSS]
        assert write.locator(".diff-code .hljs-tag").count() >= 2
        assert write.locator("img").count() == 0

        # todo_write: a checklist with each status
        todo = page.locator("#log .row.tool[data-call]").nth(2)
        items = todo.locator("li.todo")
        assert items.all_inner_texts()[0].endswith("read the notes")
        assert [items.nth(i).get_attribute("class") for i in range(3)] == [
            "todo completed",
            "todo in_progress",
            "todo pending",
        ]
        assert items.nth(2).locator(".todo-text").inner_text() == XSS

        # bash: the command, then its output
        bash = page.locator("#log .row.tool[data-call]").nth(3)
        assert bash.locator(".bash-command").inner_text() == "$ echo from-bash"
        assert bash.locator(".tool-result-section .label").inner_text() == "Output"
        assert bash.locator(".tool-output").inner_text().strip() == "from-bash"

        # anything else: key/value pairs
        other = page.locator("#log .row.tool[data-call]").nth(4)
        assert other.locator(".kv dt").all_inner_texts() == ["path", "note"]
        assert other.locator(".kv dd").all_inner_texts() == [".", XSS]

        assert page.evaluate("() => window.pwned") is None
        assert page.locator("#log img").count() == 0
        (tmp_path / "ws" / "notes.txt").read_text().index("line 3: the slow red fox")
        shot(page, "tool-cards")


def test_an_edit_waiting_for_approval_shows_its_diff(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [{"toolCalls": TOOL_SCRIPT[0]["toolCalls"][:1]}, {"text": "edited"}]
    with serve(env) as server, open_page(browser, 390) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#sidebar-toggle")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "edit it")
        approval = page.locator("#approvals .approval")
        approval.wait_for()
        # against the file (line 3 of notes.txt, 3 lines of context), not the arguments alone
        assert approval.locator(".diff-hunk").inner_text() == "@@ −1,7 +1,8 @@"
        assert approval.locator(".diff-line.del .diff-code").all_inner_texts() == [
            "line 3: the quick brown fox"
        ]
        assert approval.locator(".diff-line.add").count() == 2
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shot(page, "approval-diff-390")
        approval.locator("button[data-answer='once']").click()
        approval.wait_for(state="detached")
        page_idle(page)


# ---- correct state ----------------------------------------------------------------------------


def test_an_unknown_session_clears_the_header_and_disables_the_composer(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    sid = long_session(env.store, env.workspace, turns=3)
    with serve(env) as server, open_page(browser, 1280, allow="404 (Not Found)") as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        assert page.inner_text("#session-title").startswith("Turn 1")
        assert page.inner_text("#context-use").startswith("context ")
        # opening a session moves the focus to its composer
        assert page.evaluate("() => document.activeElement.id") == "prompt"
        assert page.is_enabled("#prompt")

        page.evaluate("() => { location.hash = '#s=20990101-000000-000-00000000'; }")
        page.wait_for_function("() => !document.getElementById('empty').hidden")
        assert page.inner_text("#session-title") == "Unknown session"
        assert page.inner_text("#context-use") == "" and page.inner_text("#cache-hit") == ""
        assert page.locator("#log .row").count() == 0
        assert page.is_disabled("#prompt") and page.is_disabled("#send")
        shot(page, "unknown-session")


def test_only_new_messages_are_announced_and_the_marker_reads_as_the_spec_says(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    # the scripted provider answers by the session's request count: any index gets the reply
    env.script, env.window = [{"text": "a fresh reply"}] * 400, 128_000
    sid = long_session(env.store, env.workspace, turns=60, compact_after=50)
    with serve(env) as server, open_page(browser, 1280, height=600) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        # the transcript is not a live region; one polite region carries new messages
        assert page.get_attribute("#conversation", "aria-live") is None
        assert page.locator("[aria-live]").count() == 1
        assert page.get_attribute("#announcer", "aria-live") == "polite"
        scroll_to_beginning(page)
        assert page.inner_text("#log").count("Turn 1:") >= 1
        assert page.text_content("#announcer") == ""  # pages loaded on scroll: silent

        reveal(page, ".row.marker")  # far below the beginning: its block is parked
        marker = page.locator("#log .row.marker")
        assert marker.locator(".marker-title").inner_text() == "… earlier context was compacted …"
        stats = marker.locator(".marker-stats")
        assert not stats.is_visible()  # the details wait behind the disclosure
        marker.locator("details.marker-details > summary").click()
        assert stats.is_visible() and stats.inner_text().startswith("Compacted ")

        send(page, "hello again")
        page_idle(page)
        page.wait_for_selector("#log .row.assistant:last-child:has-text('a fresh reply')")
        assert page.text_content("#announcer") == "Assistant: a fresh reply", page.text_content(
            "#toast"
        )


# ---- copy and time ----------------------------------------------------------------------------


def test_copy_buttons_hover_timestamps_and_the_theme_toggle(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "Run this:\n\n```python\nprint('fox')\n```\n\nand **done**."}]
    with serve(env) as server, open_page(browser, 1280) as page:
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "show me *code*")
        page_idle(page)
        reply = page.locator("#log .row.assistant")
        reply.wait_for()

        # the message's copy button copies its Markdown as written; the code block's its code
        reply.hover()
        reply.locator("button.copy-message").click()
        page.wait_for_function(
            "() => document.querySelector('.row.assistant .copy-message').textContent === 'Copied'"
        )
        assert page.evaluate("() => navigator.clipboard.readText()") == (
            "Run this:\n\n```python\nprint('fox')\n```\n\nand **done**."
        )
        reply.locator("pre").hover()
        reply.locator("button.copy-code").click()
        assert page.evaluate("() => navigator.clipboard.readText()") == "print('fox')"
        user_row = page.locator("#log .row.user")
        user_row.hover()
        user_row.locator("button.copy-message").click()
        assert page.evaluate("() => navigator.clipboard.readText()") == "show me *code*"

        # every row's time is on hover: the event's own time, as the browser formats it
        sid = page.evaluate("() => window.dsh.sessionId")
        stored = {e["seq"]: e["time"] for e in stored_events(env, sid)}
        seq = int(reply.get_attribute("data-seq"))
        expected = page.evaluate(f"() => new Date({stored[seq]}).toLocaleString()")
        assert reply.get_attribute("title") == expected

        # the theme: auto -> light -> dark -> auto, remembered across a reload
        def background() -> str:
            return page.evaluate("() => getComputedStyle(document.body).backgroundColor")

        assert page.inner_text("#theme-toggle") == "Theme: auto"
        page.click("#theme-toggle")
        assert page.inner_text("#theme-toggle") == "Theme: light"
        assert background() == "rgb(255, 255, 255)"
        page.click("#theme-toggle")
        assert page.inner_text("#theme-toggle") == "Theme: dark"
        assert background() == "rgb(13, 17, 23)"
        assert page.get_attribute("#hljs-dark", "media") == "all"
        assert page.get_attribute("#hljs-light", "media") == "not all"
        shot(page, "theme-dark")
        page.reload()
        page.wait_for_function("() => window.dsh.info")
        assert page.inner_text("#theme-toggle") == "Theme: dark"
        assert background() == "rgb(13, 17, 23)"
        page.click("#theme-toggle")
        assert page.inner_text("#theme-toggle") == "Theme: auto"


# ---- find ---------------------------------------------------------------------------------------


def test_the_search_box_filters_sessions_by_workspace_and_id(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    (tmp_path / "alpha-project").mkdir()
    (tmp_path / "beta-project").mkdir()
    alpha = long_session(env.store, tmp_path / "alpha-project", turns=1)
    beta = long_session(env.store, tmp_path / "beta-project", turns=1)
    with serve(env) as server, open_page(browser, 1280) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        items = page.locator("#session-list .session-item")
        page.wait_for_function("() => document.querySelectorAll('.session-item').length === 2")

        def shown() -> list[str]:
            return [
                items.nth(i).get_attribute("data-id") or ""
                for i in range(items.count())
                if items.nth(i).is_visible()
            ]

        page.fill("#session-search", "ALPHA")
        assert shown() == [alpha]
        page.fill("#session-search", "project " + beta[-6:])
        assert shown() == [beta]
        assert page.is_hidden("#session-none")
        page.fill("#session-search", "gamma")
        assert shown() == []
        assert page.inner_text("#session-none") == "No session matches."
        shot(page, "session-search-none")
        page.fill("#session-search", "")
        assert sorted(shown()) == sorted([alpha, beta])
