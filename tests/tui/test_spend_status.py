"""The session's spend in the status bar: ``/cost``'s estimated total and billed tokens, new
after each request, tokens alone when no list price is known, left out of a narrow line
before the context figure."""

from __future__ import annotations

import re
from typing import Any

from dsh.agent.billing import Bill, CostReport, cost_report
from dsh.agent.spend import spend_of, spend_text
from dsh.llm.prices import DEFAULT_PRICES
from dsh.surface import Session
from dsh.tui.status_bar import StatusInfo, status_text
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import run, text_of


def bill(model: str, *, priced: bool, tokens: int = 1000) -> Bill:
    price = DEFAULT_PRICES["deepseek"] if priced else None
    return Bill("p", model, "conversation", 1, tokens, 0, 0, tokens // 10, price)


def test_the_spend_is_costs_total_and_every_billed_token() -> None:
    priced = CostReport((bill("a", priced=True, tokens=150_000),))
    assert spend_of(priced).tokens == 165_000
    assert priced.cost is not None
    assert spend_text(spend_of(priced)) == f"${priced.cost:.4f} · 165k tok"
    unknown = CostReport((bill("local", priced=False, tokens=900),))
    assert spend_text(spend_of(unknown)) == "990 tok"  # no price made up
    both = CostReport((*priced.bills, *unknown.bills))
    assert spend_text(spend_of(both)) == f"${priced.cost:.4f}+ · 166k tok"  # more than priced
    assert spend_text(spend_of(CostReport(()))) is None


def test_a_narrow_bar_drops_the_spend_before_the_context() -> None:
    info = StatusInfo(
        model="deepseek-chat",
        context_tokens=32_000,
        context_window=128_000,
        cache_ratio=0.5,
        spend="$0.0420 · 183k tok",
    )
    assert status_text(info).plain == (
        " deepseek-chat · context 25% of 128k · $0.0420 · 183k tok · cache hits 50%"
    )
    assert status_text(info, 60).plain == (
        " deepseek-chat · context 25% of 128k · $0.0420 · 183k tok"
    )
    assert status_text(info, 45).plain == " deepseek-chat · context 25% of 128k"


def test_the_bar_shows_what_cost_says_after_each_request(rig: Rig) -> None:
    app = rig.app([{"text": "first answer"}, {"text": "second answer"}])
    shown: list[str | None] = []

    async def body(pilot: Any) -> None:
        assert app.status_bar.info.spend is None  # nothing billed yet
        await run_prompt(pilot, "one")
        shown.append(app.status_bar.info.spend)
        await run_prompt(pilot, "two")
        shown.append(app.status_bar.info.spend)
        await submit(pilot, "/cost")
        await settle(pilot, lambda: "Estimated total" in text_of(app))
        total = re.search(r"Estimated total: (\$[0-9.]+)", text_of(app))
        assert total is not None
        assert (shown[-1] or "").startswith(f"{total.group(1)} · ")

    run(app, body)
    session_id = app.last_session_id
    assert session_id is not None
    with Session.open(rig.store, session_id) as session:
        expected = spend_text(spend_of(cost_report(session.events)))
    assert shown[-1] == expected
    assert shown[0] is not None and shown[0] != shown[-1]  # new after each request
