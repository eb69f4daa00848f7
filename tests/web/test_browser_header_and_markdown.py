"""The header keeps a readable title beside every pill (the "busy in another process" one too:
the pills wrap under it, the title is cut with an ellipsis), and a reply keeps its lines as the
terminal UI shows a plain reply, its Markdown still Markdown (lists, code, a quote with its
bar)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.web import BackgroundServer, WebRuntime
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import ARTIFACTS, open_page, send, serve, wait_turn_over
from tests.web.test_approval_mode_api import ask_env
from tests.web.test_browser_undo import open_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LONG_TITLE = "Explain the compaction planner and why the retained tail is chosen as it is " * 2
PLAIN = "\n".join(f"line {i} of a plain reply" for i in range(5))
MARKDOWN = """Steps:
- one
- two

```python
def f():
    return 1
```

> a quote
> on two lines"""


@pytest.mark.parametrize("width", [1280, 768, 390])
def test_the_title_keeps_a_readable_width_beside_the_busy_pill(
    browser: Any, tmp_path: Path, width: int
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "ok"}]
    with serve(env) as server, open_page(browser) as page:
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"{server.base_url}/?token={TOKEN}")
        if width <= 768:  # the session list starts folded away
            page.click("#sidebar-toggle")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, LONG_TITLE)
        wait_turn_over(page, "ok")
        # the pills a session held by another process shows (as renderRunState sets them)
        page.evaluate(
            """() => {
                const busy = document.getElementById('busy-elsewhere');
                busy.hidden = false;
                busy.textContent = 'busy in another process (pid 4194303)';
                document.getElementById('approval-mode').hidden = false;
            }"""
        )
        title = page.evaluate(
            """() => {
                const t = document.getElementById('session-title');
                const style = getComputedStyle(t);
                return { width: t.getBoundingClientRect().width, scroll: t.scrollWidth,
                         client: t.clientWidth, overflow: style.textOverflow,
                         page: document.documentElement.scrollWidth };
            }"""
        )
        assert title["width"] >= min(240, width - 120), title  # about 30 characters or more
        assert title["overflow"] == "ellipsis", title  # what does not fit is cut with one
        assert title["page"] <= width, title
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"header-busy-{width}.png"))


def test_a_reply_keeps_its_lines_and_its_markdown(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": PLAIN}, {"text": MARKDOWN}]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "plain")
        wait_turn_over(page, "line 4 of a plain reply")
        send(page, "markdown")
        wait_turn_over(page, "a quote")
        replies = page.locator("#log .row.assistant .body")
        plain = replies.nth(0)
        assert plain.inner_text().splitlines() == PLAIN.splitlines()
        assert plain.locator("p").count() == 1 and plain.locator("br").count() == 4
        md = replies.nth(1)
        assert md.locator("ul > li").all_inner_texts() == ["one", "two"]
        code = md.locator("pre code").inner_text()
        assert code.splitlines() == ["def f():", "    return 1"]
        assert md.locator("pre br").count() == 0
        quote = md.locator("blockquote")
        assert quote.inner_text().splitlines() == ["a quote", "on two lines"]
        bar = quote.evaluate(
            "(q) => { const s = getComputedStyle(q);"
            " return [parseFloat(s.borderLeftWidth), s.borderLeftStyle]; }"
        )
        assert bar[0] >= 2 and bar[1] == "solid", bar


def header_rows(page: Any) -> dict[str, float]:
    """The header's height and whether its figures sit beside the title (one row)."""
    rows: dict[str, float] = page.evaluate(
        """() => {
            const title = document.getElementById('session-title').getBoundingClientRect();
            const meta = document.querySelector('#header .meta').getBoundingClientRect();
            const header = document.getElementById('header').getBoundingClientRect();
            return { height: header.height, beside: meta.top < title.bottom ? 1 : 0 };
        }"""
    )
    return rows


def test_the_header_stays_one_row_when_a_turn_runs_at_1280(browser: Any, tmp_path: Path) -> None:
    """The "running" pill used to push the figures under the title, so the conversation moved
    down a row at each turn's start and back at its end (a model name as long as a local
    server's makes the header that full)."""
    env = ask_env(tmp_path, "echo waits")  # the turn waits on its approval: it runs a while
    route = Route(env.provider(), "qwen2.5-coder-32b", env.window)
    server = BackgroundServer(env.app(WebRuntime(env.settings, route))).start()
    try:
        with open_page(browser) as page:
            open_new_session(page, server.base_url)
            page.wait_for_function(
                "() => document.getElementById('model').textContent.includes('qwen')"
            )
            idle = header_rows(page)
            send(page, "a prompt that names the session with a title longer than the header")
            page.wait_for_selector("#approvals .approval")
            assert page.is_visible("#run-state")
            running = header_rows(page)
            assert idle["beside"] == running["beside"] == 1, (idle, running)
            assert running["height"] == idle["height"], (idle, running)
            title = page.locator("#session-title")
            assert title.get_attribute("title") == title.inner_text()  # its whole text
    finally:
        server.stop()


WIDE_TABLE = "\n".join(
    [
        "| " + " | ".join(f"column{i}" for i in range(14)) + " |",
        "|" + "---|" * 14,
        "| " + " | ".join(f"value-{i}-zzzz" for i in range(14)) + " |",
    ]
)


def test_a_wide_table_scrolls_in_its_own_box_on_a_phone(browser: Any, tmp_path: Path) -> None:
    """At 375 px a 14-column table broke its headers one letter per line and still ran off
    the screen: it scrolls sideways in a box of its own, its words whole, the page does not."""
    env = make_env(tmp_path)
    env.script = [{"text": f"Here:\n\n{WIDE_TABLE}\n\nThat is all."}]
    with serve(env) as server, open_page(browser) as page:
        page.set_viewport_size({"width": 375, "height": 740})
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#sidebar-toggle")  # the session list is a drawer, folded away
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        page.wait_for_function("() => document.body.dataset.sidebar === 'closed'")
        send(page, "wide check")
        wait_turn_over(page, "That is all.")
        shown = page.evaluate(
            """() => {
                const table = document.querySelector('#log .row.assistant table');
                const box = table.parentElement;
                const conversation = document.getElementById('conversation');
                const line = parseFloat(getComputedStyle(table.querySelector('th')).lineHeight);
                const tallest = Math.max(...[...table.querySelectorAll('th, td')].map(
                    (cell) => cell.getBoundingClientRect().height));
                return { boxed: box.classList.contains('table-wrap'),
                         scrolls: box.scrollWidth > box.clientWidth,
                         overflowX: getComputedStyle(box).overflowX,
                         conversation: conversation.scrollWidth - conversation.clientWidth,
                         lines: tallest / line };
            }"""
        )
        assert shown["boxed"] and shown["scrolls"] and shown["overflowX"] == "auto", shown
        assert shown["conversation"] <= 0, shown  # the conversation does not scroll sideways
        assert shown["lines"] < 2.5, shown  # every cell one line (with its padding)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "wide-table-375.png"))
