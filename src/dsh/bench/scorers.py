"""Scorers (bench.md, "Scores per backend"): pure functions of what a run sent and logged.

Each scorer takes plain inputs — the conversation requests in send order, the session log, the
planted facts, the pass and crossing records — so it can be checked on a hand-made session whose
right answer is known (``tests/bench/test_scorers.py``).

* ``survival``: share of anchors present verbatim in the final request; ``survival_split``
  scores current facts and superseded facts apart (where each superseded value still shows).
* ``superseded_leaks``: a superseded value in a checkpoint of a request sent after the
  superseding message, when no original message of that request still shows the new value: in a
  state-class checkpoint (recallable state, basic summary) always, in an index stub unless the
  stub marks it as replaced (``marks_replaced``). With the new value still verbatim in the tail
  the old one is only *stale* (the next pass rewrites it). Marked stub mentions are history,
  counted apart as ``stub_mentions``.
* ``stub_stability``: every index stub byte-identical and at the same position in every request
  after the first one that carried it.
* ``pairing_errors``: the provider-schema rule that every tool call is answered by a tool result
  before the next assistant or user message, no result answers an unknown call, and no id is
  repeated within one reply (ids may repeat across replies: ``dsh.events.OpenCalls``).
* ``cache_figures``: hit ratio and billed cost over a replayed trace (in the rule's view of each
  request), overall and for the first request after each pass.

Recall is scored in ``dsh.bench.recall_scores``.
* ``growth_commits`` and ``passes_per_crossing``: the safety figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh.bench.cache_rules import Served
from dsh.bench.results import StubStability, Superseded
from dsh.bench.trace import CallRecord, checkpoint_class
from dsh.events import (
    Message,
    OpenCalls,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from dsh.llm.cache_sim import message_segment
from dsh.llm.prices import Price
from dsh.llm.types import ModelRequest

REPLACED = re.compile(
    r"\b(replaced|superseded|no longer|previously|formerly|obsolete|outdated|old value)\b|→|->",
    re.IGNORECASE,
)
"""Words that, on the line of an old value, mark it as replaced."""


# ---- text ------------------------------------------------------------------------------------


def message_strings(message: Message) -> Iterator[str]:
    """Every string a provider sees in a message: text, reasoning, tool-call arguments (raw and
    decoded string values) and tool results."""
    for block in message.content:
        if isinstance(block, TextBlock | ReasoningBlock):
            yield block.text
        elif isinstance(block, ToolCallBlock):
            yield block.arguments
            try:
                decoded = json.loads(block.arguments or "{}")
            except ValueError:
                continue
            if isinstance(decoded, dict):
                yield from (v for v in decoded.values() if isinstance(v, str))
        elif isinstance(block, ToolResultBlock):
            yield from (inner.text for inner in block.content)


def message_text(message: Message) -> str:
    return "\n".join(message_strings(message))


def request_text(request: ModelRequest) -> str:
    return "\n".join([request.system or "", *(message_text(m) for m in request.messages)])


# ---- survival --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Survival:
    present: dict[str, bool]

    @property
    def share(self) -> float:
        return sum(self.present.values()) / len(self.present) if self.present else 1.0


def survival(final: ModelRequest | None, anchors: Iterable[str]) -> Survival:
    text = request_text(final) if final is not None else ""
    return Survival({anchor: anchor in text for anchor in anchors})


def raw_anchors(final: ModelRequest | None, anchors: Iterable[str]) -> set[str]:
    """Anchors still present in an original (non-checkpoint) message of the final request."""
    if final is None:
        return set()
    text = "\n".join(message_text(m) for m in final.messages if checkpoint_class(m) is None)
    return {anchor for anchor in anchors if anchor in text}


def marks_replaced(text: str, old: str) -> bool:
    """Every line of ``text`` naming ``old`` also says it was replaced (``REPLACED``). A
    keyword line lists many literals, so there the mark must be ``old``'s own: a group whose
    label says replaced holds it, or an arrow follows it in its group."""
    lines = [line for line in text.splitlines() if old in line]
    return bool(lines) and all(_line_marks(line, old) for line in lines)


def _line_marks(line: str, old: str) -> bool:
    if not line.lstrip().startswith("Keywords"):
        return bool(REPLACED.search(line.replace(old, "")))
    for group in line.split(";"):
        if old not in group:
            continue
        label = group.split(":", 1)[0] if ":" in group else ""
        if REPLACED.search(label) or re.search(re.escape(old) + r"\s*(?:→|->)", group):
            return True
    return False


def where_shown(final: ModelRequest | None, literal: str) -> str | None:
    """Where ``literal`` shows in the final request: ``original`` (an original message),
    ``state`` (a state checkpoint or basic summary), ``stub`` (an index stub, unmarked),
    ``marked`` (only in stubs that mark it as replaced), ``system``; None when absent."""
    if final is None:
        return None
    places = []
    for message in final.messages:
        text = message_text(message)
        if literal not in text:
            continue
        kind = checkpoint_class(message)
        if kind is None:
            places.append("original")
        elif kind == "state":
            places.append("state")
        else:
            places.append("marked" if marks_replaced(text, literal) else "stub")
    for place in ("original", "state", "stub", "marked"):
        if place in places:
            return place
    return "system" if literal in (final.system or "") else None


def survival_split(
    final: ModelRequest | None, current: Iterable[str], superseded: Iterable[str]
) -> dict[str, Any]:
    """Current facts: share verbatim in the final request. Superseded facts: where each old
    value still shows, and how many show as current (in a state, or an unmarked stub)."""
    now = survival(final, current)
    shown = {old: where_shown(final, old) for old in superseded}
    as_current = [old for old, place in shown.items() if place in ("state", "stub")]
    return {
        "current": {"n": len(now.present), "share": now.share, "present": now.present},
        "superseded": {
            "n": len(shown),
            "share": (sum(p is not None for p in shown.values()) / len(shown)) if shown else 0.0,
            "where": shown,
            "asCurrent": len(as_current),
            "asCurrentShare": len(as_current) / len(shown) if shown else 0.0,
        },
    }


# ---- superseded values -----------------------------------------------------------------------


@dataclass(slots=True)
class LeakReport:
    pairs: int = 0
    leaked: list[str] = field(default_factory=list)
    """Old values that came back as current at least once."""
    leaking_requests: int = 0
    """(pair, request) combinations with a leak."""
    first_leak: dict[str, int] = field(default_factory=dict)
    """Old value -> index of the first request that leaked it."""
    stale_requests: int = 0
    """(pair, request) combinations where a state written before the change still names the old
    value while the new one is still verbatim in the tail (the next pass corrects it)."""
    stub_mentions: int = 0
    """(pair, request) combinations where only stubs marking it as replaced name the old
    value."""
    unseen: list[str] = field(default_factory=list)
    """New values never sent (the supersession did not happen within the run)."""

    def figures(self) -> Superseded:
        return Superseded(
            pairs=self.pairs,
            leaks=len(self.leaked),
            leaked=self.leaked,
            leaking_requests=self.leaking_requests,
            first_leak=self.first_leak,
            stale_requests=self.stale_requests,
            stub_mentions=self.stub_mentions,
            unseen=self.unseen,
        )


def superseded_leaks(
    requests: Sequence[ModelRequest], pairs: Iterable[tuple[str, str]]
) -> LeakReport:
    """``pairs``: (old value, new value). From the first request that carries the new value on,
    a request *leaks* when a state-class checkpoint, or an index stub that does not mark it as
    replaced, names the old value and no original message still shows the new one: the model is
    told the old value is current and nothing verbatim says otherwise. With the new value still
    verbatim in the tail it is only *stale*."""
    report = LeakReport()
    for old, new in pairs:
        report.pairs += 1
        start = _first_request_with(requests, new)
        if start is None:
            report.unseen.append(new)
            continue
        for index in range(start, len(requests)):
            messages = requests[index].messages
            classes = {
                "stub" if kind == "index" and not marks_replaced(text, old) else kind
                for m in messages
                if (kind := checkpoint_class(m)) is not None and old in (text := message_text(m))
            }
            if "state" in classes or "stub" in classes:
                raw_new = any(
                    checkpoint_class(m) is None and new in message_text(m) for m in messages
                )
                if raw_new:
                    report.stale_requests += 1
                    continue
                report.leaking_requests += 1
                report.first_leak.setdefault(old, index)
                if old not in report.leaked:
                    report.leaked.append(old)
            elif "index" in classes:
                report.stub_mentions += 1
    return report


def _first_request_with(requests: Sequence[ModelRequest], literal: str) -> int | None:
    """Index of the first request with ``literal`` in any message (each message read once)."""
    seen: set[int] = set()
    for index, request in enumerate(requests):
        for message in request.messages:
            if id(message) in seen:
                continue
            seen.add(id(message))
            if literal in message_text(message):
                return index
    return None


# ---- stub stability --------------------------------------------------------------------------


@dataclass(slots=True)
class Stability:
    stubs: int = 0
    rolled_up: int = 0
    """Stubs that left the surface into a code rollup that carries their footer verbatim."""
    shifted: int = 0
    """Stub positions that moved head-ward because a rollup before them replaced several stubs
    (order kept, bytes kept; the prefix after the rollup is new to the provider's cache)."""
    violations: list[str] = field(default_factory=list)

    def figures(self) -> StubStability:
        return StubStability(
            stubs=self.stubs,
            rolled_up=self.rolled_up,
            shifted=self.shifted,
            violations=len(self.violations),
            examples=self.violations[:5],
        )


_FOOTER = re.compile(r"\[checkpoint c\d+: [^\]]*\]")


def _footer_of(body: str) -> str | None:
    found = _FOOTER.findall(body)
    return found[-1] if found else None


def stub_stability(requests: Sequence[ModelRequest]) -> Stability:
    """Every index stub keeps its bytes and its position in every later request. Two moves are
    not violations, and are counted instead: a stub that leaves into a rollup checkpoint carrying
    its footer verbatim (the rollup ladder), and a stub that moves head-ward, order kept, in the
    request where a rollup before it first appears."""
    report = Stability()
    frozen: dict[str, tuple[int, int, str]] = {}  # message id -> (first request, position, bytes)
    for index, request in enumerate(requests):
        messages = request.messages
        where_now = {m.id: i for i, m in enumerate(messages)}
        index_texts = [message_segment(m)[0] for m in messages if checkpoint_class(m) == "index"]
        retired = {
            stub_id
            for stub_id, (_, _, body) in frozen.items()
            if stub_id not in where_now
            and (footer := _footer_of(body)) is not None
            and any(footer in text for text in index_texts)
        }
        retired_positions = sorted(frozen[stub_id][1] for stub_id in retired)
        for stub_id in retired:
            del frozen[stub_id]
        report.rolled_up += len(retired)
        for stub_id, (first, position, body) in list(frozen.items()):
            here = where_now.get(stub_id)
            if here is None:
                report.violations.append(
                    f"request {index}: stub {stub_id} "
                    f"(first in request {first} at #{position}) gone"
                )
                continue
            if here != position:
                rolled_before = any(p < position for p in retired_positions)
                if here < position and rolled_before:
                    report.shifted += 1
                    frozen[stub_id] = (first, here, body)
                else:
                    report.violations.append(
                        f"request {index}: stub {stub_id} "
                        f"(first in request {first} at #{position}) moved to #{here}"
                    )
                    continue
            if message_segment(messages[here])[0] != body:
                report.violations.append(f"request {index}: stub {stub_id} changed its bytes")
        for position, message in enumerate(messages):
            if message.id not in frozen and checkpoint_class(message) == "index":
                frozen[message.id] = (index, position, message_segment(message)[0])
                report.stubs += 1
    return report


# ---- pairing ---------------------------------------------------------------------------------


def pairing_errors(messages: Sequence[Message]) -> list[str]:
    """Provider-schema problems: a call without its result before the next assistant or user
    message, a result with no open call of its id, a call id repeated within one reply.

    Results pair with calls by dsh's one rule (``dsh.events.OpenCalls``: a result answers the
    nearest earlier open call of its id), so an id that comes back in a later reply (llama.cpp
    numbers every reply's calls from ``call_0``) is a new call, not a duplicate."""
    errors: list[str] = []
    open_calls: OpenCalls[str] = OpenCalls()
    for index, message in enumerate(messages):
        if message.role in ("assistant", "user", "system"):
            unanswered = open_calls.pending()
            if unanswered:
                errors.append(f"#{index}: {message.role} message before results of {unanswered}")
                open_calls = OpenCalls()
            if message.role == "assistant":
                for call in message.tool_calls():
                    if open_calls.latest(call.id) is not None:
                        errors.append(f"#{index}: duplicate tool call id {call.id} in one reply")
                    open_calls.open(call.id, call.id)
        elif message.role == "tool":
            for block in message.content:
                if (
                    isinstance(block, ToolResultBlock)
                    and open_calls.answer(block.tool_call_id) is None
                ):
                    errors.append(f"#{index}: result for unknown call {block.tool_call_id}")
    unanswered = open_calls.pending()
    if unanswered:
        errors.append(f"end: calls without results {unanswered}")
    return errors


# ---- cache and cost --------------------------------------------------------------------------


def cache_figures(
    calls: Sequence[CallRecord], served: Sequence[Served], price: Price, view: str = "messages"
) -> dict[str, Any]:
    """Hit ratio (Σ read / Σ input) and billed cost, overall, per purpose, for the first request
    after each pass, and the cumulative hit ratio after each conversation request."""
    totals: dict[str, dict[str, float]] = {}
    cumulative: list[float] = []
    read_so_far = input_so_far = 0
    first_read = first_input = first_count = 0
    per_pass: list[dict[str, Any]] = []
    for call, hit in zip(calls, served, strict=True):
        if call.purpose == "probe":
            continue
        size = call.view(view).tokens
        bucket = totals.setdefault(
            call.purpose, {"input": 0, "read": 0, "write": 0, "output": 0, "cost": 0.0}
        )
        bucket["input"] += size
        bucket["read"] += hit.read
        bucket["write"] += hit.write
        bucket["output"] += call.output_tokens
        bucket["cost"] += price.cost(
            input_tokens=size,
            read=hit.read,
            write=hit.write,
            output_tokens=call.output_tokens,
        )
        read_so_far += hit.read
        input_so_far += size
        if call.purpose == "conversation":
            cumulative.append(read_so_far / input_so_far if input_so_far else 0.0)
            if call.first_after:
                first_read += hit.read
                first_input += size
                first_count += 1
                per_pass.append(
                    {
                        "passes": list(call.first_after),
                        "step": call.step,
                        "hitRatio": hit.read / size if size else 0.0,
                    }
                )
    first = {
        "requests": first_count,
        "inputTokens": first_input,
        "readTokens": first_read,
        "hitRatio": first_read / first_input if first_input else None,
        "perRequest": per_pass,
    }
    return _cache_summary(totals, first, cumulative)


def _cache_summary(
    totals: dict[str, dict[str, float]], first: dict[str, Any], cumulative: list[float]
) -> dict[str, Any]:
    all_input = sum(b["input"] for b in totals.values())
    all_read = sum(b["read"] for b in totals.values())
    conversation = totals.get("conversation", {})
    summariser = totals.get("compaction", {})
    return {
        "hitRatio": all_read / all_input if all_input else 0.0,
        "conversationHitRatio": (
            conversation["read"] / conversation["input"] if conversation.get("input") else 0.0
        ),
        "inputTokens": int(all_input),
        "readTokens": int(all_read),
        "writeTokens": int(sum(b["write"] for b in totals.values())),
        "outputTokens": int(sum(b["output"] for b in totals.values())),
        "cost": sum(b["cost"] for b in totals.values()),
        "conversationCost": conversation.get("cost", 0.0),
        "summariserCost": summariser.get("cost", 0.0),
        "summariserInputTokens": int(summariser.get("input", 0)),
        "summariserReadTokens": int(summariser.get("read", 0)),
        "firstAfterPass": first,
        "cumulative": cumulative,
    }


# ---- safety ----------------------------------------------------------------------------------


def growth_commits(passes: Iterable[tuple[int, int]]) -> int:
    """Passes whose commit left the context at least as large: (tokens before, tokens after)."""
    return sum(after >= before for before, after in passes)


def passes_per_crossing(crossings: Iterable[int]) -> dict[str, float]:
    """Passes run by each pre-step that found the context over the threshold."""
    counts = list(crossings)
    return {
        "crossings": len(counts),
        "max": max(counts, default=0),
        "mean": sum(counts) / len(counts) if counts else 0.0,
        "loops": sum(c > 1 for c in counts),
    }
