"""``history_search`` by words: when the literal scan finds nothing, the messages holding the
query's words in any order and word form, best first (docs/compaction.md, "The two recall
tools")."""

from __future__ import annotations

import math
import re

import pytest
import snowballstemmer  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.recall import HistorySearchTool, read_checkpoint, search_history
from dsh.recall.checkpoints import list_checkpoints
from dsh.recall.render import SpanCache
from dsh.recall.word_search import STOP_WORDS, locate, needed, query_terms, search_words
from dsh.store import MemoryStore
from tests.helpers import append_chat_turn, append_tool_turn, new_session
from tests.recall.builders import bracket, run_tool, two_passes

TAG = re.compile(r"^\[(c\d+) #msg (\d+)\] ", re.M)


def compacted(replies: list[str], *, per_checkpoint: int = 0):
    """A session whose chat turns (prompt ``q<i>``, reply ``replies[i]``) are all compacted:
    one state checkpoint each ``per_checkpoint`` turns (0: one for all)."""
    session = new_session(MemoryStore())
    turns = [append_chat_turn(session, f"q{i}", reply) for i, reply in enumerate(replies)]
    size = per_checkpoint or len(turns)
    for number, first in enumerate(range(0, len(turns), size)):
        shadowed = [seq for turn in turns[first : first + size] for seq in turn.surface]
        bracket(session, shadowed, f"## Goal\nwork {number}", compaction_id=f"k-{number}")
    append_chat_turn(session, "and now?", "next")
    return session


def tagged(text: str) -> list[tuple[str, int]]:
    return [(checkpoint, int(index)) for checkpoint, index in TAG.findall(text)]


def test_a_query_in_other_words_finds_the_message_the_literal_scan_misses():
    session = new_session(MemoryStore())
    turn = append_tool_turn(
        session,
        "why do the jobs give up?",
        calls=[("read_file", '{"path":"sched.toml"}', "# retries are capped\nmax_retries = 3")],
        final="they stop after three tries",
    )
    (checkpoint,) = [bracket(session, turn.surface, "## Goal\nsched", compaction_id="k-1")]
    append_chat_turn(session, "ok", "ok")
    literal = search_history(session.events, "retry cap")
    assert literal.meta == {"scanned": 1, "matched": 0, "truncated": False, "byWords": 1}
    assert literal.text.startswith("Found 0 match(es) across 0 checkpoint(s) (scanned 1)")
    assert "the query's words were looked for on their own" in literal.text
    ((hit, index),) = tagged(literal.text)
    assert hit == checkpoint.id
    assert "max_retries = 3" in read_checkpoint(session.events, hit, index).text
    hit_line = next(line for line in literal.text.splitlines() if line.startswith("[c"))
    assert "retries are capped" in hit_line
    assert literal.text.endswith(
        "Read a match in context with history_read (checkpoint id, offset = the #msg number)."
    )


def test_messages_holding_every_word_rank_before_those_holding_half_whatever_the_log_order():
    session = compacted(
        [
            "the nightly job ran",  # one of the two words
            "an importer crashed at 03:00",  # one of the two words
            "the nightly import crashed again",  # all three
            "nightly imports are slow",  # two of three
        ]
    )
    output = search_history(session.events, "crashes of nightly imports")
    order = [session_text(session, index) for _, index in tagged(output.text)]
    assert order == [
        "Assistant: the nightly import crashed again",  # all three words
        "Assistant: an importer crashed at 03:00",  # two; "crash" is in 2 messages of 10
        "Assistant: nightly imports are slow",  # two; "nightly" and "import" in 3 each
    ]  # "the nightly job ran" holds 1 of 3: under half


def session_text(session, index: int) -> str:
    (checkpoint,) = list_checkpoints(session.events)
    return SpanCache().span(session.events, checkpoint)[index]


def test_between_equal_counts_the_rarer_word_ranks_first():
    session = compacted(["deploy ok", "deploy ok", "deploy ok", "zebra seen"])
    output = search_history(session.events, "deploy zebra")
    first = tagged(output.text)[0][1]
    assert session_text(session, first) == "Assistant: zebra seen"


def test_a_word_hit_snippet_shows_the_rarest_word_even_deep_in_a_long_message():
    filler = "lorem ipsum dolor sit amet " * 40
    session = compacted([f"{filler} the quux flag was renamed {filler}", "flag set", "flag set"])
    output = search_history(session.events, "flag quux")
    line = next(line for line in output.text.splitlines() if line.startswith("[c"))
    assert "quux" in line
    assert len(line) < 400


def test_more_word_hits_than_the_limit_are_cut_and_say_so():
    session = compacted([f"worker {n} hung" for n in range(6)])
    output = search_history(session.events, "workers hung", limit=2)
    assert len(tagged(output.text)) == 2
    assert output.meta["byWords"] == 6
    assert "Showing the first 2 (2 holding all); raise limit to see more." in output.text


def test_a_literal_match_answers_as_before_without_looking_for_words():
    passes = two_passes()
    output = search_history(passes.session.events, "users")
    assert "byWords" not in output.meta
    assert "looked for on their own" not in output.text


def test_no_word_hit_keeps_the_literal_zero_match_answer():
    passes = two_passes()
    for query in ("zzz qqq", "the of and", "a b c"):
        output = search_history(passes.session.events, query)
        assert output.meta == {"scanned": 4, "matched": 0, "truncated": False}
        assert "The scan is literal (exact substring, case-insensitive)" in output.text


def test_a_scoped_search_with_no_literal_match_anywhere_looks_for_words_everywhere():
    session = compacted(["the gateway timed out", "nothing here"], per_checkpoint=1)
    first, second = list_checkpoints(session.events)
    output = run_tool(
        HistorySearchTool(), {"query": "gateway timeouts", "checkpoint": second.id}, session
    )
    assert tagged(output.text) == [(first.id, 1)]


def test_query_terms_drop_stop_words_and_single_characters_and_merge_word_forms():
    assert query_terms("What is the retry limit?") == ("retri", "limit")
    assert query_terms("retries RETRY retried") == ("retri",)
    assert query_terms("x = y of the") == ()
    assert query_terms("max_retries scheduler.lease") == ("max", "retri", "schedul", "leas")


WORDS = ["deploy", "deploys", "deployed", "zebra", "zebras", "port", "ports", "crash", "crashed"]
WORDS += ["retry", "retries", "nightly", "lease", "the", "of", "x", "q7", "ok"]

_STEM = snowballstemmer.stemmer("english")


def independent_terms(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {_STEM.stemWord(w) for w in words if len(w) > 1 and w not in STOP_WORDS}


@settings(max_examples=150, deadline=None)
@given(
    replies=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
        min_size=1,
        max_size=8,
    ),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
)
def test_word_hits_are_exactly_the_messages_holding_half_the_terms_ranked_by_count(replies, query):
    session = compacted(replies, per_checkpoint=3)
    terms = query_terms(query)
    targets = list_checkpoints(session.events)
    spans = SpanCache()
    found = search_words(session.events, targets, terms, spans)
    expected: dict[tuple[str, int], set[str]] = {}
    holding = dict.fromkeys(terms, 0)
    texts = [text for target in targets for text in spans.span(session.events, target)]
    for target in targets:
        for index, text in enumerate(spans.span(session.events, target)):
            held = independent_terms(text) & set(terms)
            for term in held:
                holding[term] += 1
            if terms and len(held) >= needed(terms):
                expected[(target.id, index)] = held
    assert {(hit.checkpoint.id, hit.index) for hit in found.hits} == set(expected)
    assert found.messages == len(texts)
    for hit in found.hits:  # BM25's idf over every message scanned, hit or not
        idf = [math.log(1 + (len(texts) - holding[t] + 0.5) / (holding[t] + 0.5)) for t in hit.held]
        assert hit.score == pytest.approx(sum(idf))
        assert set(hit.held) == expected[(hit.checkpoint.id, hit.index)]
    keys = [(len(hit.held), hit.score) for hit in found.hits]
    assert keys == sorted(keys, key=lambda key: (-key[0], -key[1]))
    for hit in found.hits:
        message = spans.span(session.events, hit.checkpoint)[hit.index].lower()
        at, width = locate(session.events, hit, spans)
        assert _STEM.stemWord(message[at : at + width]) == hit.rarest
        assert hit.rarest in hit.held
