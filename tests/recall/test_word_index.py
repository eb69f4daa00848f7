"""``history_search``'s word fallback through each span's word index answers exactly what the
scan it replaced answered: the same hits, held words, scores, lengths, order and snippet
places, whatever the session, the query, the order of the checkpoints searched and whether the
lower-cased spans came from memory or from a span file."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.events import Event
from dsh.recall import list_checkpoints
from dsh.recall.checkpoints import Checkpoint
from dsh.recall.render import INDEX_LABEL, PRIOR_STATE_LABEL, SpanCache, render_span
from dsh.recall.word_index import WORD, WordIndex
from dsh.recall.word_search import _probe, locate, needed, query_terms, search_words, stem
from dsh.store import MemoryStore
from dsh.surface import Session
from tests.helpers import append_chat_turn, append_tool_turn, new_session
from tests.recall.builders import bracket

# ---- the scan the index replaced, kept as the reference ------------------------------------


def reference_search(
    events: Sequence[Event], targets: Sequence[Checkpoint], terms: Sequence[str], spans: SpanCache
) -> list[tuple[str, int, tuple[str, ...], float, int, int, int]]:
    """Every hit, best first, as (checkpoint id, #msg, held, score, chars, at, width): the
    word fallback as it was before the index, every message of every span scanned, ranked
    with the originals before the checkpoint texts."""
    probes = [(term, _probe(term)) for term in terms]
    found = []
    holding = dict.fromkeys(terms, 0)
    messages = 0
    for target in targets:
        lowered = spans.lowered(events, target)
        messages += len(lowered)
        for index, lower in enumerate(lowered):
            places = {}
            for term, probe in probes:
                place = reference_first_word(lower, term, probe)
                if place is not None:
                    places[term] = place
                    holding[term] += 1
            if len(places) >= needed(terms):
                found.append((target, index, len(lower), places))
    rarity = {
        term: math.log(1 + (messages - count + 0.5) / (count + 0.5))
        for term, count in holding.items()
        if count
    }
    hits = []
    copied = {}
    for target, index, chars, places in found:
        held = tuple(term for term in terms if term in places)
        rarest = max(held, key=lambda term: rarity[term])
        at, width = places[rarest]
        score = sum(rarity[term] for term in held)
        hits.append((target.id, index, held, score, chars, at, width))
        copied[target.id, index] = is_copy(events, target, index)
    # originals first, then checkpoint texts (a checkpoint's words nested in a later span)
    hits.sort(key=lambda hit: (copied[hit[0], hit[1]], -len(hit[2]), -hit[3], hit[4]))
    return hits


def is_copy(events: Sequence[Event], target: Checkpoint, index: int) -> bool:
    """Whether message ``index`` of ``target``'s span is a checkpoint's text, by its label."""
    return render_span(events, target)[index].startswith((PRIOR_STATE_LABEL, INDEX_LABEL))


def reference_first_word(lower: str, term: str, probe: str) -> tuple[int, int] | None:
    at = lower.find(probe)
    while at >= 0:
        if at == 0 or not lower[at - 1].isalnum():
            word = WORD.match(lower, at)
            if word is not None and stem(word.group()) == term:
                return at, word.end() - at
        at = lower.find(probe, at + 1)
    return None


def indexed_search(
    events: Sequence[Event], targets: Sequence[Checkpoint], terms: Sequence[str], spans: SpanCache
) -> list[tuple[str, int, tuple[str, ...], float, int, int, int]]:
    found = search_words(events, targets, terms, spans)
    return [
        (hit.checkpoint.id, hit.index, hit.held, hit.score, hit.chars, *locate(events, hit, spans))
        for hit in found.hits
    ]


# ---- random sessions and queries -----------------------------------------------------------

WORDS = ["retry", "retries", "retried", "retrying", "deploy", "deployed", "deployment", "dying"]
WORDS += ["die", "port", "ports", "reporting", "support", "crash", "crashes", "nightly", "the"]
WORDS += ["of", "x", "q7", "7731", "İstanbul", "istanbul", "straße", "STRASSE", "ΣΊΣΥΦΟΣ"]
WORDS += ["ﬁle", "file", "max_retries", "retry-limit", "a.retry", "2025-05-30", "worker_3"]
SEPARATORS = [" ", "  ", "\n", ", ", ": ", "_", "-", ".", "/", "=", "…", "\t"]

text = st.lists(
    st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), min_size=1, max_size=12
).map(lambda parts: "".join(word + gap for word, gap in parts))
query = st.one_of(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    st.text(st.sampled_from("retiydoplnsçΣİ _-"), min_size=1, max_size=12),
)


def random_session(data: st.DataObject) -> Session:
    """A session of chat and tool turns with random texts, compacted a few turns at a time
    (sometimes a checkpoint that shadows an earlier one), so spans hold user, assistant,
    tool-result and checkpoint messages."""
    session = new_session(MemoryStore())
    turns: list[list[int]] = []
    for step in range(data.draw(st.integers(2, 9), label="turns")):
        prompt, reply = data.draw(text, label="prompt"), data.draw(text, label="reply")
        if data.draw(st.booleans(), label="tool"):
            result = data.draw(text, label="result") * data.draw(st.integers(1, 3))
            turn = append_tool_turn(session, prompt, calls=[("bash", "{}", result)], final=reply)
        else:
            turn = append_chat_turn(session, prompt, reply)
        turns.append(turn.surface)
        on_surface = [t for t in turns if all(seq in session.nodes for seq in t)]
        current = sorted(on_surface, key=lambda t: session.surface.position(t[0]))
        if len(current) >= 2 and data.draw(st.booleans(), label="compact"):
            first = data.draw(st.integers(0, len(current) - 2), label="first")
            span = [seq for t in current[first : first + 2] for seq in t]
            made = bracket(session, span, data.draw(text), compaction_id=f"k{step}")
            turns = [t for t in turns if t not in current[first : first + 2]]
            turns.append([made.node] if made.node is not None else [])
    return session


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_indexed_word_hits_equal_the_scan_over_random_sessions_and_queries(
    data: st.DataObject,
) -> None:
    session = random_session(data)
    targets = list_checkpoints(session.events)
    if targets:  # the tool searches one checkpoint first, then every other
        first = data.draw(st.integers(0, len(targets) - 1), label="first target")
        targets = [targets[first], *targets[:first], *targets[first + 1 :]]
    terms = query_terms(data.draw(query, label="query"))
    expected = reference_search(session.events, targets, terms, SpanCache())
    assert indexed_search(session.events, targets, terms, SpanCache()) == expected
    found = search_words(session.events, targets, terms, SpanCache())
    shown = data.draw(st.integers(0, len(expected) + 1), label="shown")
    assert found.count == len(expected) and found.best(shown) == found.hits[:shown]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_indexed_word_hits_equal_the_scan_when_the_spans_come_from_a_span_file(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    path = tmp_path_factory.mktemp("spans") / "s.spans"
    session = random_session(data)
    targets = list_checkpoints(session.events)
    words = query_terms(data.draw(query, label="query"))
    writer = SpanCache()
    writer.use_file(path)
    for target in targets:
        writer.lowered(session.events, target)
    writer.flush()
    reader = SpanCache()
    reader.use_file(path)  # a new process: spans read from the file, hits placed from it
    expected = reference_search(session.events, targets, words, SpanCache())
    assert indexed_search(session.events, targets, words, reader) == expected


def test_a_word_index_lists_each_word_once_and_the_messages_holding_it_in_order():
    index = WordIndex.build(["deploy the deploy", "retry_3 deploy", "", "é-retry"])
    assert index.words == ("3", "deploy", "retry", "the", "é")
    assert index.lengths == (17, 14, 0, 7)
    assert [list(p) for p in index.matching("dep", lambda word: word == "deploy")] == [[0, 1]]
    assert [list(p) for p in index.matching("re", lambda word: True)] == [[1, 3]]
    assert [list(p) for p in index.matching("", lambda word: word < "e")] == [[1], [0, 1]]
    assert index.matching("zz", lambda word: True) == []


def test_a_hit_is_placed_at_the_word_itself_not_inside_another_or_at_a_look_alike():
    """Where a hit's snippet is centred is the first whole word that stems to the term: not the
    same letters inside a longer word (``autocrashes``), nor a word that begins alike but stems
    elsewhere (``crashworthy``)."""
    from dsh.recall.word_search import locate

    text = "autocrashes and crashworthy, then crashes at last"
    session = new_session(MemoryStore())
    turn = append_chat_turn(session, text, "ok")
    bracket(session, turn.surface, "s", compaction_id="k")
    targets = list_checkpoints(session.events)
    spans = SpanCache()
    found = search_words(session.events, targets, query_terms("crashes"), spans)
    (hit,) = found.best(1)
    start, length = locate(session.events, hit, spans)
    lower = spans.lowered_message(session.events, hit.checkpoint, hit.index)
    assert lower[start : start + length] == "crashes"
    assert lower[start - 6 : start] == " then "


def test_a_term_no_word_of_the_message_stems_to_has_no_place():
    from dsh.recall.word_search import _first_word

    assert _first_word("autocrashes and crashworthy", "crash", "cras") is None
