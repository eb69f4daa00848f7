"""Each scorer on a hand-made session or request sequence whose right answer is known."""

from __future__ import annotations

import asyncio

import pytest

from dsh.bench.cache_rules import Price, Served
from dsh.bench.recall_scores import cues, paraphrase_key, recall, shares_substring
from dsh.bench.scorers import (
    cache_figures,
    growth_commits,
    marks_replaced,
    pairing_errors,
    passes_per_crossing,
    raw_anchors,
    stub_stability,
    superseded_leaks,
    survival,
    survival_split,
    where_shown,
)
from dsh.bench.trace import CallRecord, View, checkpoint_class
from dsh.compaction import BasicBackend, CompactionEngine, ExtractiveSummarizer
from dsh.config import CompactionSettings
from dsh.llm.types import ModelRequest
from dsh.store import MemoryStore
from tests.helpers import (
    append_tool_turn,
    assistant_message,
    checkpoint_message,
    new_session,
    tool_call_block,
    tool_result_message,
    user_message,
)

STATE = "<compacted-summary>\n{}\n</compacted-summary>"
STUB = "<compacted-index-stub>\n{}\n</compacted-index-stub>"


def request(*messages: object) -> ModelRequest:
    return ModelRequest(
        provider="p",
        model="m",
        system="sys",
        tools=(),
        messages=tuple(messages),  # type: ignore[arg-type]
    )


# ---- survival --------------------------------------------------------------------------------


def test_survival_counts_anchors_anywhere_the_provider_sees_them() -> None:
    call = tool_call_block(
        "c1", "edit_file", '{"path":"deploy/a.toml","old":"x","new":"port = 9443"}'
    )
    final = request(
        user_message("ticket ZEBRA-7731"),
        assistant_message(tool_calls=[call]),
        tool_result_message("c1", "ChecksumError: block 0x3f2a"),
        checkpoint_message(STATE.format("- KESTREL-0419"), "p1"),
    )
    result = survival(
        final,
        [
            "ZEBRA-7731",
            "port = 9443",
            "ChecksumError: block 0x3f2a",
            "KESTREL-0419",
            "missing-anchor",
        ],
    )
    assert result.present["missing-anchor"] is False
    assert result.share == pytest.approx(4 / 5)
    # Only original messages count as "raw": the checkpoint's KESTREL-0419 is not.
    assert raw_anchors(final, ["ZEBRA-7731", "KESTREL-0419"]) == {"ZEBRA-7731"}


# ---- recall ----------------------------------------------------------------------------------


def compacted_session():
    """Three turns, then a basic pass that compacts all but the last one.

    Turn 1 holds the look-alike ZEBRA-7713, turn 2 a 9,000-character log (so a page read from
    turn 1 cannot reach turn 3), turn 3 the anchor ZEBRA-7731."""
    session = new_session(MemoryStore())
    append_tool_turn(session, "old ticket ZEBRA-7713 is closed", final="ok")
    append_tool_turn(
        session, "read the log", calls=[("read_file", '{"path":"log"}', "x" * 9000)], final="ok"
    )
    append_tool_turn(session, "the ticket is ZEBRA-7731", final="noted")
    append_tool_turn(session, "keep going", final="fine")
    settings = CompactionSettings(backend="basic", retain_tokens=10)
    engine = CompactionEngine(session, BasicBackend(ExtractiveSummarizer(), settings), settings)
    assert asyncio.run(engine.compact_now(window=100_000)) is not None
    return session


def test_recall_ranks_the_first_page_that_holds_the_anchor() -> None:
    events = compacted_session().events
    exact = recall(events, [("ZEBRA-7731", "ZEBRA-7731")])
    # The partial query "ZEBRA-77" hits turn 1 first (the look-alike; its page stops before the
    # long log), then turn 3: rank 2.
    partial = recall(events, [("ZEBRA-7731", "ZEBRA-77")])
    missing = recall(events, [("NOPE-1", "NOPE-1")])
    assert exact.ranks == {"ZEBRA-7731": 1}
    assert partial.ranks == {"ZEBRA-7731": 2}
    assert (partial.hit_at(1), partial.hit_at(5), partial.mrr) == (0.0, 1.0, 0.5)
    assert missing.ranks == {"NOPE-1": None} and missing.mrr == 0.0


def test_recall_on_a_log_without_checkpoints_finds_nothing() -> None:
    session = new_session(MemoryStore())
    append_tool_turn(session, "the ticket is ZEBRA-7731")
    assert recall(session.events, [("ZEBRA-7731", "ZEBRA-7731")]).ranks == {"ZEBRA-7731": None}


# ---- superseded values -----------------------------------------------------------------------


def test_superseded_values_leak_only_when_nothing_verbatim_says_otherwise() -> None:
    old_state = checkpoint_message(STATE.format("- port = 8123"), "p1", id="state-1")
    new_state = checkpoint_message(STATE.format("- port = 9443"), "p2", id="state-2")
    old_stub = checkpoint_message(STUB.format("Keywords — config: port = 8123"), "p2", id="stub")
    marked = checkpoint_message(
        STUB.format("- port = 8123 (replaced by port = 9443)"), "p3", id="stub-2"
    )
    change = user_message("move it: port = 9443")
    requests = [
        request(user_message("port = 8123 for now")),  # 0: before the change: not scored
        request(old_state, change),  # 1: old state, the change still verbatim: stale
        request(old_state, user_message("go on")),  # 2: old state, nothing says otherwise: leak
        request(old_stub, new_state),  # 3: an unmarked stub names it as if current: leak
        request(marked, new_state),  # 4: a stub that marks it replaced: history
        request(new_state),  # 5: clean
    ]
    report = superseded_leaks(requests, [("port = 8123", "port = 9443")])
    assert report.leaked == ["port = 8123"]
    assert (report.leaking_requests, report.stale_requests, report.stub_mentions) == (2, 1, 1)
    assert report.first_leak == {"port = 8123": 2}
    assert superseded_leaks(requests[:1], [("a = 1", "a = 2")]).unseen == ["a = 2"]


def test_a_stub_marks_an_old_value_replaced_only_on_every_line_naming_it() -> None:
    assert marks_replaced("- port = 8123 (replaced by port = 9443)", "port = 8123")
    assert marks_replaced("port = 8123 -> port = 9443", "port = 8123")
    assert not marks_replaced("- port = 8123", "port = 8123")


def test_on_a_keyword_line_only_the_literal_s_own_mark_counts():
    line = "Keywords — config: port = 8123, mode = fast; replaced: mode = fast"
    assert marks_replaced(line, "mode = fast")
    assert not marks_replaced(line, "port = 8123")  # another literal's mark is not its own
    assert marks_replaced("Keywords — config: port = 8123 → port = 9443", "port = 8123")
    assert not marks_replaced("Keywords — config: port = 8123; note: no longer x", "port = 8123")
    assert not marks_replaced("port = 8123 was replaced\nport = 8123", "port = 8123")
    assert not marks_replaced("nothing here", "port = 8123")


def test_survival_scores_current_and_superseded_facts_apart() -> None:
    stub = checkpoint_message(STUB.format("- port = 8123"), "p1", id="stub")
    final = request(stub, user_message("ticket ZEBRA-7731, port = 9443"))
    split = survival_split(final, ["ZEBRA-7731", "port = 9443", "KESTREL-0419"], ["port = 8123"])
    assert split["current"]["present"] == {
        "ZEBRA-7731": True,
        "port = 9443": True,
        "KESTREL-0419": False,
    }
    assert split["current"]["share"] == pytest.approx(2 / 3)
    # The old port shows only in an unmarked stub: shown, and shown as current.
    assert split["superseded"]["where"] == {"port = 8123": "stub"}
    assert split["superseded"]["asCurrent"] == 1
    raw = request(user_message("it was port = 8123 before"))
    assert where_shown(raw, "port = 8123") == "original"
    assert where_shown(raw, "port = 1") is None


def test_paraphrases_are_scored_per_query_and_cues_need_a_working_search() -> None:
    events = compacted_session().events
    # "the ticket is" is the words around the anchor; "bug number" is not in the log.
    score = recall(
        events,
        [
            (paraphrase_key("ZEBRA-7731", q), "ZEBRA-7731", q)
            for q in ("the ticket is", "bug number")
        ],
    )
    assert score.ranks == {
        "ZEBRA-7731 ← the ticket is": 1,
        "ZEBRA-7731 ← bug number": None,
    }
    assert score.hit_at(5) == 0.5
    # The compacted text names "ticket" — a search for it finds the anchor's page (rank 2,
    # after the look-alike's); it does not name "bug number".
    found = cues(events, "Keywords — ticket", {"ZEBRA-7731": ["ZEBRA-7731", "ticket"]})
    assert found == {"ZEBRA-7731": "ticket"}
    assert cues(events, "nothing useful", {"ZEBRA-7731": ["ZEBRA-7731"]}) == {"ZEBRA-7731": None}


def test_shares_substring_is_case_insensitive_and_eight_characters_long() -> None:
    assert shares_substring("Checksum mismatch", "ChecksumError: block") == "Checksum"
    assert shares_substring("corrupt block", "ChecksumError: block 0x3f2a") is None
    assert shares_substring("port = 81", "port = 8123") == "port = 8"


def test_checkpoint_classes() -> None:
    assert checkpoint_class(checkpoint_message(STUB.format("x"), "p")) == "index"
    assert checkpoint_class(checkpoint_message(STATE.format("x"), "p")) == "state"
    rollup = "<compacted-rollup>\nRolled-up index of 2 earlier checkpoints\n</compacted-rollup>"
    assert checkpoint_class(checkpoint_message(rollup, "p")) == "index"
    assert checkpoint_class(user_message(STUB.format("typed by a person"))) is None


# ---- stub stability --------------------------------------------------------------------------


def test_stub_stability_flags_changed_moved_and_vanished_stubs() -> None:
    a = checkpoint_message(STUB.format("stub a"), "p1", id="stub-a")
    b = checkpoint_message(STUB.format("stub b"), "p2", id="stub-b")
    b_changed = checkpoint_message(STUB.format("stub b, rewritten"), "p2", id="stub-b")
    tail = user_message("tail")
    report = stub_stability(
        [
            request(a, tail),  # a appears at #0
            request(a, b, tail),  # b appears at #1
            request(a, b, tail),  # fine
            request(a, b_changed),  # b changed its bytes
            request(b, tail),  # a gone; b moved to #0
        ]
    )
    assert report.stubs == 2
    assert len(report.violations) == 3
    assert "changed its bytes" in report.violations[0]
    assert "stub-a" in report.violations[1] and "gone" in report.violations[1]
    assert "moved to #0" in report.violations[2]
    assert stub_stability([request(a, tail), request(a, b, tail)]).violations == []


def test_stub_stability_accepts_stubs_rolled_up_with_their_footers_and_the_shift_after() -> None:
    footer = (
        "[checkpoint c{}: shadows conversation span #{}–#{}; "
        "originals retrievable via history_read]"
    )
    a = checkpoint_message(STUB.format("stub a\n" + footer.format(10, 1, 9)), "p1", id="stub-a")
    b = checkpoint_message(STUB.format("stub b\n" + footer.format(20, 11, 19)), "p2", id="stub-b")
    c = checkpoint_message(STUB.format("stub c\n" + footer.format(30, 21, 29)), "p3", id="stub-c")
    rollup = checkpoint_message(
        STUB.format("rolled up\n" + footer.format(10, 1, 9) + "\n" + footer.format(20, 11, 19)),
        "p4",
        id="rollup",
    )
    lossy = checkpoint_message(STUB.format("rolled up\n" + footer.format(10, 1, 9)), "p4", id="r2")
    tail = user_message("tail")
    before = [request(a, b, c, tail)]
    report = stub_stability([*before, request(rollup, c, tail), request(rollup, c, tail)])
    assert (report.rolled_up, report.shifted, report.violations) == (2, 1, [])
    assert report.stubs == 4
    dropped = stub_stability([*before, request(lossy, c, tail)])
    assert dropped.rolled_up == 1
    assert any("stub-b" in v and "gone" in v for v in dropped.violations)


# ---- pairing ---------------------------------------------------------------------------------


def test_pairing_errors_follow_the_provider_schema() -> None:
    c1, c2 = tool_call_block("c1"), tool_call_block("c2")
    good = [
        user_message("go"),
        assistant_message(tool_calls=[c1, c2]),
        tool_result_message("c1", "one"),
        tool_result_message("c2", "two"),
        assistant_message("done"),
    ]
    assert pairing_errors(good) == []
    unanswered = [user_message("go"), assistant_message(tool_calls=[c1]), user_message("more")]
    assert "before results of ['c1']" in pairing_errors(unanswered)[0]
    orphan = [user_message("go"), tool_result_message("c9", "?")]
    assert "unknown call c9" in pairing_errors(orphan)[0]
    open_end = [user_message("go"), assistant_message(tool_calls=[c1])]
    assert "without results" in pairing_errors(open_end)[0]
    answered_twice = [
        assistant_message(tool_calls=[c1]),
        tool_result_message("c1", "one"),
        tool_result_message("c1", "again"),
    ]
    assert "unknown call c1" in pairing_errors(answered_twice)[0]


def test_a_call_id_repeated_in_every_reply_is_no_pairing_error() -> None:
    # llama.cpp numbers each reply's calls from call_0: legal, and paired by dsh's rule
    session = [user_message("go")]
    for n in range(4):
        session += [
            assistant_message(tool_calls=[tool_call_block("call_0"), tool_call_block("call_1")]),
            tool_result_message("call_0", f"first {n}"),
            tool_result_message("call_1", f"second {n}"),
        ]
    session.append(assistant_message("done"))
    assert pairing_errors(session) == []


def test_a_call_id_repeated_within_one_reply_is_a_duplicate() -> None:
    twice = [
        user_message("go"),
        assistant_message(tool_calls=[tool_call_block("call_0"), tool_call_block("call_0")]),
        tool_result_message("call_0", "one"),
        tool_result_message("call_0", "two"),
    ]
    assert pairing_errors(twice) == ["#1: duplicate tool call id call_0 in one reply"]


# ---- cache figures and safety ----------------------------------------------------------------


def _call(purpose: str, tokens: int, step: int, output: int, **extra: object) -> CallRecord:
    view = View([("k", tokens)])
    return CallRecord(purpose, view, view, step=step, output_tokens=output, **extra)  # type: ignore[arg-type]


def test_cache_figures_pool_tokens_and_bill_each_call() -> None:
    price = Price(model="m", input=1.0, output=2.0, cache_read=0.1)
    calls = [
        _call("conversation", 1000, 0, 10),
        _call("compaction", 500, 1, 100),
        _call("conversation", 600, 1, 10, first_after=[1]),
        _call("probe", 9999, 2, 9),
    ]
    served = [Served(0), Served(400), Served(300), Served(9999)]
    figures = cache_figures(calls, served, price)
    # Probes are left out: read 700 of 2,100 input tokens.
    assert figures["hitRatio"] == pytest.approx(700 / 2100)
    assert figures["conversationHitRatio"] == pytest.approx(300 / 1600)
    assert figures["firstAfterPass"] == {
        "requests": 1,
        "inputTokens": 600,
        "readTokens": 300,
        "hitRatio": 0.5,
        "perRequest": [{"passes": [1], "step": 1, "hitRatio": 0.5}],
    }
    # Summariser: (100 + 400*0.1) * $1 + 100 * $2 = 340 units -> $0.00034.
    assert figures["summariserCost"] == pytest.approx(340 / 1e6)
    assert (figures["summariserInputTokens"], figures["summariserReadTokens"]) == (500, 400)
    # Cumulative after each conversation request: 0/1000, then (0+400+300)/(1000+500+600).
    assert figures["cumulative"] == pytest.approx([0.0, 700 / 2100])


def test_growth_and_passes_per_crossing() -> None:
    assert growth_commits([(1000, 400), (900, 900), (800, 850)]) == 2
    assert passes_per_crossing([1, 1, 0, 3]) == {"crossings": 4, "max": 3, "mean": 1.25, "loops": 1}
    assert passes_per_crossing([]) == {"crossings": 0, "max": 0, "mean": 0.0, "loops": 0}
