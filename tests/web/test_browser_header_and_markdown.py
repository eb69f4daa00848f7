"""The header keeps a readable title beside every pill (the "busy in another process" one too:
the pills wrap under it, the title is cut with an ellipsis), and a reply keeps its lines as the
terminal UI shows a plain reply, its Markdown still Markdown (lists, code, a quote with its
bar)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import TOKEN, make_env
from tests.web.pages import ARTIFACTS, open_page, send, serve, wait_turn_over

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
