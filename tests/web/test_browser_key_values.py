"""A tool's arguments as a key/value list (an MCP tool's, in its approval and its card), in a
real browser: a long key wraps within at most 40 % of the list and its value keeps the rest;
nothing overflows the approval or the card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.web.conftest import TOKEN, make_env
from tests.web.pages import ARTIFACTS, open_page, reveal, send, serve, wait_turn_over

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LONG_KEY = (
    "an_argument_whose_name_is_longer_than_a_column_can_hold_an_argument_whose_name_is_"
    "longer_than_a_column_can_hold_an_argument_whose_name_is_longer"
)
"""The second argument of the test MCP server's ``labelled`` tool."""
ARGUMENTS = {"reason": "a short value", LONG_KEY: "the long key's value, which has room to read"}

LAYOUT = """(box) => {
    const rect = (node) => node.getBoundingClientRect();
    const list = box.querySelector('.kv');
    const [shortKey, longKey] = list.querySelectorAll('dt');
    const [shortValue, longValue] = list.querySelectorAll('dd');
    const line = parseFloat(getComputedStyle(longKey).lineHeight);
    return {
        overflows: box.scrollWidth > box.clientWidth
            || [...list.children].some((item) => rect(item).right > rect(box).right + 0.5),
        keyShare: rect(longKey).width / rect(list).width,
        keyLines: Math.round(rect(longKey).height / line),
        keys: [shortKey.textContent, longKey.textContent],
        valueShare: rect(longValue).width / rect(list).width,
        valuesAligned: rect(shortValue).left === rect(longValue).left,
        valueBeside: rect(longValue).left >= rect(longKey).right,
    };
}"""


def well_laid_out(layout: dict[str, Any]) -> None:
    assert not layout["overflows"], layout
    assert layout["keyShare"] <= 0.41 and layout["keyLines"] >= 3, layout
    assert layout["keys"] == ["reason", LONG_KEY], layout
    assert layout["valuesAligned"] and layout["valueBeside"], layout
    assert layout["valueShare"] >= 0.5, layout


def test_a_long_argument_name_wraps_in_the_approval_and_the_card_without_overflowing(
    browser: Any, tmp_path: Path
) -> None:
    pytest.importorskip("mcp")
    from dsh.config import McpSettings
    from dsh.tools.mcp import close_mcp_servers
    from tests.mcp.conftest import server as mcp_server

    env = make_env(tmp_path, approval="ask")
    env.settings = msgspec.structs.replace(
        env.settings, mcp=McpSettings(servers={"t": mcp_server("--long-argument-names")})
    )
    env.script = [
        {"toolCalls": [{"name": "mcp__t__labelled", "arguments": ARGUMENTS}]},
        {"text": "denied"},
    ]
    try:
        with serve(env) as server, open_page(browser) as page:
            page.goto(f"{server.base_url}/?token={TOKEN}")
            page.click("#new-session")
            page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
            send(page, "go")
            approval = page.locator("#approvals .approval")
            approval.wait_for(timeout=120_000)  # an MCP server's start, on a loaded machine
            well_laid_out(approval.locator(".tool-args-view").evaluate(LAYOUT))
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "key-values-approval.png"))
            approval.locator("button[data-answer='deny']").click()
            wait_turn_over(page, "denied")
            reveal(page, ".row:has(.tool-card)")
            card = page.locator("#log .tool-card").first
            card.locator("summary").first.click()
            well_laid_out(card.locator(".tool-args-view").evaluate(LAYOUT))
            page.screenshot(path=str(ARTIFACTS / "key-values-card.png"))
    finally:
        close_mcp_servers()
