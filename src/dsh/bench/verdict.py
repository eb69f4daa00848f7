"""The report's verdict: does recallable beat basic on recall at no more than basic's cost,
and how much of its reach do the recall tools alone (``basic+recall``) already give? Every
reason it states is a figure of the run."""

from __future__ import annotations

from typing import Any

from dsh.bench.tables import money, pct, ratio, times

COST_BUDGET = 1.0
"""Recallable should beat basic on recall at no more than this multiple of basic's cost (it
must pay for itself: the target is basic's own cost)."""


def verdict(
    basic: dict[str, Any] | None,
    recallable: dict[str, Any] | None,
    rule: str,
    tools: dict[str, Any] | None = None,
) -> str:
    """Plainly: recallable against basic (and against ``basic+recall`` when it ran)."""
    if not basic or not recallable or basic.get("errors") or recallable.get("errors"):
        return "No verdict: basic and recallable did not both complete."
    reach_b = ratio(basic["reachable"], basic["anchors"]) or 0
    reach_r = ratio(recallable["reachable"], recallable["anchors"]) or 0
    cost_b, cost_r = basic[f"{rule}.cost"], recallable[f"{rule}.cost"]
    multiple = cost_r / cost_b if cost_b else float("inf")
    lines = [
        f"- Reachable facts: recallable {pct(recallable['reachable'], recallable['anchors'])}, "
        f"basic {pct(basic['reachable'], basic['anchors'])}; current facts verbatim in the final "
        f"request: recallable {pct(recallable['currentSurviving'], recallable['current'])}, "
        f"basic {pct(basic['currentSurviving'], basic['current'])}.",
        f"- Billed cost ({rule}): recallable {money(cost_r)} = {times(multiple)} "
        f"basic's {money(cost_b)}.",
    ]
    if tools and not tools.get("errors"):
        lines.append(_tools_line(basic, recallable, tools, rule))
    if reach_r > reach_b and multiple <= COST_BUDGET:
        head = (
            f"**Recallable beats basic on recall at {times(multiple)} basic's cost "
            f"(budget {COST_BUDGET:.2f}×).**"
        )
        return "\n".join([head, *lines])
    if reach_r <= reach_b:
        head = "**Recallable does not beat basic on recall here.**"
    else:
        head = (
            f"**Recallable beats basic on recall, but not within {COST_BUDGET:.2f}× basic's "
            f"cost: it costs {times(multiple)}.**"
        )
    return "\n".join([head, *lines, *(f"- Why: {w}." for w in _reasons(basic, recallable, rule))])


def _tools_line(
    basic: dict[str, Any], recallable: dict[str, Any], tools: dict[str, Any], rule: str
) -> str:
    return (
        f"- Control (basic+recall: basic compaction with the recall tools): reachable "
        f"{pct(tools['reachable'], tools['anchors'])}, paraphrase hit@5 "
        f"{pct(tools['paraphraseHit5'], tools['paraphraseN'])} against recallable's "
        f"{pct(recallable['paraphraseHit5'], recallable['paraphraseN'])}, cost "
        f"{money(tools[f'{rule}.cost'])}; the tools alone take reach from "
        f"{pct(basic['reachable'], basic['anchors'])} to "
        f"{pct(tools['reachable'], tools['anchors'])}, stubs and state take it to "
        f"{pct(recallable['reachable'], recallable['anchors'])}."
    )


def _reasons(basic: dict[str, Any], recallable: dict[str, Any], rule: str) -> list[str]:
    why = []
    summ_b, summ_r = basic[f"{rule}.summariserCost"], recallable[f"{rule}.summariserCost"]
    if summ_r > summ_b:
        why.append(
            f"summariser calls cost {money(summ_r)} against {money(summ_b)} "
            f"({recallable['summariserCalls']} calls against {basic['summariserCalls']}; "
            f"{pct(recallable[f'{rule}.summariserRead'], recallable[f'{rule}.summariserInput'])} "
            f"of recallable's summariser input is a cache hit, "
            f"{pct(basic[f'{rule}.summariserRead'], basic[f'{rule}.summariserInput'])} of basic's)"
        )
    if recallable["passes"] > basic["passes"]:
        why.append(
            f"{recallable['passes']} passes against {basic['passes']}: the context right after a "
            f"pass is {recallable['tokensAfterSum'] / max(recallable['passes'], 1):,.0f} tokens "
            f"against {basic['tokensAfterSum'] / max(basic['passes'], 1):,.0f}, so the threshold "
            "comes back sooner"
        )
    if recallable["warnings"]:
        why.append(
            f"{recallable['warnings']} pre-steps ended still over the threshold (the frozen stubs, "
            "the state and the retained tail reached it)"
        )
    conv_r = recallable[f"{rule}.cost"] - summ_r
    conv_b = basic[f"{rule}.cost"] - summ_b
    if conv_r > conv_b:
        why.append(
            f"conversation requests cost {money(conv_r)} against {money(conv_b)} (more tokens per "
            "request: stubs, the recall tools and their prompt section)"
        )
    first_r = ratio(recallable[f"{rule}.firstRead"], recallable[f"{rule}.firstInput"])
    first_b = ratio(basic[f"{rule}.firstRead"], basic[f"{rule}.firstInput"])
    if first_r is not None and first_b is not None and first_r < first_b:
        why.append(
            f"the first request after a pass hits {first_r:.0%} under the {rule} rule, against "
            f"basic's {first_b:.0%}"
        )
    return why
