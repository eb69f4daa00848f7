"""``history_search`` lists hits in original messages first, then hits in checkpoint texts
(docs/compaction.md, "The two recall tools").

The audit (finding 7): a checkpoint's text nested in a later checkpoint's span (a superseded
state, a stub a rollup took) is a paraphrase or keyword index of messages the search also
scans, yet its hits were listed among the originals in log order and counted toward ``limit``
and the answer's size bound: 2 of 15 hits for ``QUOKKA-4412``, 5 of 18 for ``port = 9090``,
4 of 17 for ``timeout_ms``. The originals now come first, counted apart in the header, and
``limit`` and the size bound fill with them first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.cli.recall import recall
from dsh.recall import HistorySearchTool, SearchedEverywhere, SpanCache, search_history
from dsh.recall.checkpoints import list_checkpoints
from dsh.recall.hits import COPIES_HEADING, hits_text, scan
from dsh.recall.snippets import Bound
from dsh.store import JsonlStore, MemoryStore, span_cache_path
from dsh.surface import Session
from tests.helpers import append_chat_turn, fixed_clock, new_session
from tests.recall.builders import Bracket, bracket, run_tool
from tests.recall.test_word_index import is_copy, query, random_session

word_query = query.filter(str.strip)

QUERY = "port = 9090"


@dataclass
class CopyFirst:
    """A state over turn 1; a stub over [that state, turn 2]; a rollup over [that stub,
    turn 3]. ``QUERY`` is in turn 1 (twice), turn 2 (once, after the state's copy in the
    stub's span) and in the state's and the stub's texts."""

    session: Session
    state: Bracket
    stub: Bracket
    rollup: Bracket


def copy_first(session: Session | None = None) -> CopyFirst:
    session = session if session is not None else new_session(MemoryStore())
    t1 = append_chat_turn(session, f"set {QUERY} in app.toml", f"done: {QUERY}")
    state = bracket(session, t1.surface, f"## Current state\n{QUERY} set", compaction_id="k1")
    t2 = append_chat_turn(session, "restart it", f"restarted with {QUERY}")
    assert state.node is not None
    stub = bracket(
        session,
        [state.node, *t2.surface],
        f"Restarted.\nKeywords — config: {QUERY}",
        kind="index",
        compaction_id="k2",
    )
    t3 = append_chat_turn(session, "and now?", "all good")
    assert stub.node is not None
    rollup = bracket(
        session, [stub.node, *t3.surface], "Rolled up.", kind="index", compaction_id="k3"
    )
    append_chat_turn(session, "thanks", "welcome")
    return CopyFirst(session, state, stub, rollup)


def hit_ids(text: str) -> list[str]:
    return [line.split("]")[0] + "]" for line in text.splitlines() if line.startswith("[c")]


def test_originals_come_first_then_checkpoint_texts_counted_apart():
    case = copy_first()
    output = search_history(case.session.events, QUERY)
    state, stub, rollup = case.state.id, case.stub.id, case.rollup.id
    assert output.text.startswith(
        "Found 3 match(es) in the originals (+2 in checkpoint texts, listed after them) across "
        f"3 checkpoint(s) (scanned 3) for {QUERY!r}.\n\n"
    )
    assert hit_ids(output.text) == [
        f"[{state} #msg 0]",
        f"[{state} #msg 1]",
        f"[{stub} #msg 2]",
        f"[{stub} #msg 0]",  # the state's text, copied into the stub's span
        f"[{rollup} #msg 0]",  # the stub's text, copied into the rollup's span
    ]
    lines = output.text.splitlines()
    assert lines[lines.index(COPIES_HEADING) + 1].startswith(f"[{stub} #msg 0] ")
    assert lines[lines.index(COPIES_HEADING) - 1].startswith(f"[{stub} #msg 2] ")
    assert output.meta == {"scanned": 3, "matched": 5, "truncated": False, "inCheckpointTexts": 2}


def test_a_search_with_no_hit_in_checkpoint_texts_reads_as_before():
    output = search_history(copy_first().session.events, "in app.toml")
    assert output.text.startswith("Found 1 match(es) across 1 checkpoint(s) (scanned 3)")
    assert COPIES_HEADING not in output.text
    assert output.meta == {"scanned": 3, "matched": 1, "truncated": False}


def test_hits_only_in_checkpoint_texts_are_listed_under_the_heading():
    case = copy_first()
    output = search_history(case.session.events, "keywords — config")
    assert output.text.startswith(
        "Found 0 match(es) in the originals (+1 in checkpoint texts, listed after them)"
    )
    assert output.text.split("\n\n")[1].splitlines()[0] == COPIES_HEADING
    assert hit_ids(output.text) == [f"[{case.rollup.id} #msg 0]"]


def test_limit_is_filled_with_originals_first():
    case = copy_first()
    output = search_history(case.session.events, QUERY, limit=3)
    assert hit_ids(output.text) == [
        f"[{case.state.id} #msg 0]",
        f"[{case.state.id} #msg 1]",
        f"[{case.stub.id} #msg 2]",
    ]
    assert COPIES_HEADING not in output.text
    assert "Showing the first 3 (originals first);" in output.text
    assert output.meta == {"scanned": 3, "matched": 5, "truncated": True, "inCheckpointTexts": 2}


def test_the_size_bound_is_filled_with_originals_first_and_names_where_the_copies_are():
    case = copy_first()
    found = search_history(case.session.events, QUERY)
    originals = found.text.split("\n\n")[1].split(COPIES_HEADING)[0]
    # room for the three originals, not for the heading and a copy besides
    room = len(originals) + 10
    bounded = search_history(case.session.events, QUERY, budget_chars=room + 800 + len(QUERY))
    assert hit_ids(bounded.text) == hit_ids(found.text)[:3]
    assert (
        "Showing the first 3 (originals first) of 5, as many as fit in one answer; the other 2 "
        f"are in {case.stub.id} (1), {case.rollup.id} (1):"
    ) in bounded.text


def test_a_scoped_search_widened_to_every_other_checkpoint_counts_apart_too():
    case = copy_first()
    output = search_history(case.session.events, "keywords — config", checkpoint=case.state.id)
    assert (
        "Every other checkpoint: 0 match(es) in the originals (+1 in checkpoint texts, listed "
        "after them) across 1 checkpoint(s) (scanned 2)."
    ) in output.text
    assert output.meta == {"scanned": 3, "matched": 1, "truncated": False, "inCheckpointTexts": 1}


def test_the_tool_answers_the_same_order():
    case = copy_first()
    output = run_tool(HistorySearchTool(), {"query": QUERY}, case.session)
    assert output.text == search_history(case.session.events, QUERY).text


def test_copies_are_found_from_a_fresh_cache_and_from_the_span_file(tmp_path: Path):
    case = copy_first()
    events = case.session.events
    stub = next(c for c in list_checkpoints(events) if c.id == case.stub.id)
    assert SpanCache().copies(events, stub) == {0}
    path = tmp_path / "s.spans"
    writer = SpanCache()
    writer.use_file(path)
    writer.lowered(events, stub)
    writer.flush()
    reader = SpanCache()
    reader.use_file(path)
    assert reader.copies(events, stub) == {0}
    assert reader.copies(events, stub) is reader.copies(events, stub)  # found once


def test_dsh_recall_search_prints_the_same_order(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    store = JsonlStore(home)
    case = copy_first(Session(store.create(cwd=str(tmp_path)), clock=fixed_clock))
    case.session.close()
    result = CliRunner().invoke(recall, ["search", case.session.id, QUERY, "--limit", "4"])
    assert result.exit_code == 0, result.output
    assert hit_ids(result.stdout) == [
        f"[{case.state.id} #msg 0]",
        f"[{case.state.id} #msg 1]",
        f"[{case.stub.id} #msg 2]",
        f"[{case.stub.id} #msg 0]",
    ]
    assert "Found 3 match(es) in the originals (+2 in checkpoint texts" in result.stdout
    assert span_cache_path(home, case.session.id).exists()  # the spans were stored …
    again = CliRunner().invoke(recall, ["search", case.session.id, QUERY, "--limit", "4"])
    assert again.stdout == result.stdout  # … and read back with the same order


# ---- the order, the counts and the bound, for any set of hits -------------------------------


@dataclass(frozen=True)
class _Target:
    id: str


class _Spans:
    """What ``scan`` asks of a span cache, for spans given as (is a copy, length) per message,
    each holding the needle at its start."""

    def __init__(self, spans: list[list[tuple[bool, int]]]) -> None:
        self.spans = {f"c{n}": span for n, span in enumerate(spans)}

    def matches(self, events, target, needle):
        return [(index, 0) for index in range(len(self.spans[target.id]))]

    def copies(self, events, target):
        return {index for index, (copy, _) in enumerate(self.spans[target.id]) if copy}

    def message(self, events, target, index):
        return "needle " + "x" * self.spans[target.id][index][1]


_SPANS = st.lists(
    st.lists(st.tuples(st.booleans(), st.integers(0, 150)), max_size=6), min_size=1, max_size=6
)


@settings(max_examples=300, deadline=None)
@given(_SPANS, st.integers(1, 30), st.one_of(st.none(), st.integers(0, 1500)))
def test_any_hits_are_shown_originals_first_and_the_bound_never_drops_an_original_for_a_copy(
    spans, limit, room
):
    targets = [_Target(f"c{n}") for n in range(len(spans))]
    found = scan([], targets, "needle", Bound(limit, room), _Spans(spans))  # type: ignore[arg-type]
    places = [
        (f"c{n}", i, copy) for n, span in enumerate(spans) for i, (copy, _) in enumerate(span)
    ]
    originals = [(cid, i) for cid, i, copy in places if not copy]
    copies = [(cid, i) for cid, i, copy in places if copy]
    # the counts add up to every match
    assert found.matched == len(places) == len(originals) + found.copies
    assert found.copies == len(copies)
    # the hits shown are the first of: the originals in log order, then the copies in log order
    shown = [tuple(re.match(r"\[(c\d+) #msg (\d+)\]", hit).groups()) for hit in found.hits]
    expected = [(cid, str(i)) for cid, i in originals + copies]
    assert shown == expected[: len(shown)]
    assert found.shown_copies == max(0, len(shown) - len(originals))
    # no original left out while a copy is shown
    assert not found.shown_copies or len(shown) >= len(originals)
    # within limit, and within room unless it is the one hit always shown
    assert len(shown) <= limit
    heading = len(COPIES_HEADING) + 1 if found.shown_copies else 0
    used = sum(len(hit) + 1 for hit in found.hits) + heading
    assert room is None or len(shown) <= 1 or used <= room
    # what is not shown is counted, per checkpoint in log order
    assert sum(found.unshown.values()) == found.matched - len(shown)
    assert list(found.unshown) == [t.id for t in targets if t.id in found.unshown]
    assert found.full == (len(shown) < min(limit, len(places)))
    # the text lists the heading right before the first copy shown
    lines = hits_text("header", found).split("\n\n")[1].splitlines()
    assert (COPIES_HEADING in lines) == bool(found.shown_copies)
    if found.shown_copies:
        assert lines.index(COPIES_HEADING) == len(shown) - found.shown_copies


# ---- a search by words ranks the same way ---------------------------------------------------


def test_word_matches_list_originals_first_then_checkpoint_texts_counted_apart():
    """Nothing holds "restarted config" literally; the stub's text (copied into the rollup's
    span) holds both words and the two originals only one, yet the originals come first."""
    case = copy_first()
    output = search_history(case.session.events, "restarted config")
    stub, rollup = case.stub.id, case.rollup.id
    assert hit_ids(output.text) == [f"[{stub} #msg 1]", f"[{stub} #msg 2]", f"[{rollup} #msg 0]"]
    assert (
        "2 message(s) in the originals (+1 in checkpoint texts, listed after them) hold at least "
        "half of its 2 word(s); best first."
    ) in output.text
    lines = output.text.splitlines()
    assert lines[lines.index(COPIES_HEADING) + 1].startswith(f"[{rollup} #msg 0] ")
    assert output.meta == {
        "scanned": 3,
        "matched": 0,
        "truncated": False,
        "byWords": 3,
        "inCheckpointTexts": 1,
    }


def test_word_matches_fill_limit_and_the_size_bound_with_originals_first():
    case = copy_first()
    limited = search_history(case.session.events, "restarted config", limit=2)
    assert hit_ids(limited.text) == [f"[{case.stub.id} #msg 1]", f"[{case.stub.id} #msg 2]"]
    assert "Showing the first 2 (originals first; 0 holding all); raise limit" in limited.text
    assert COPIES_HEADING not in limited.text
    whole = search_history(case.session.events, "restarted config")
    originals = whole.text.split("\n\n")[1].split(COPIES_HEADING)[0]
    # room for the two originals and the copy, not for the heading besides
    copy_line = whole.text.split(COPIES_HEADING + "\n")[1].split("\n\n")[0]
    room = len(originals) + len(copy_line) + 1
    query = "restarted config"
    bounded = search_history(case.session.events, query, budget_chars=room + 800 + len(query))
    assert hit_ids(bounded.text) == hit_ids(whole.text)[:2]
    assert "Showing the best 2 (originals first; 0 holding all), as many as fit" in bounded.text


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_for_any_log_and_query_no_checkpoint_text_hit_precedes_an_original(data):
    """Literal or by words, scoped or not: every hit in a checkpoint's text (told by its label)
    comes after every hit in an original message, under the heading, counted apart."""
    session = random_session(data)
    events = session.events
    targets = list_checkpoints(events)
    if not targets:
        return
    query = data.draw(word_query, label="query")
    scope = data.draw(st.sampled_from([None, *[t.id for t in targets]]), label="checkpoint")
    try:
        output = search_history(events, query, checkpoint=scope, limit=200)
    except SearchedEverywhere as moved:  # pragma: no cover - a scope always names a checkpoint
        output = moved.found
    by_id = {t.id: t for t in targets}
    shown = [re.match(r"\[(c\d+) #msg (\d+)\]", line) for line in output.text.splitlines()]
    kinds = [is_copy(events, by_id[m[1]], int(m[2])) for m in shown if m]
    assert kinds == sorted(kinds)  # False (an original) before True (a copy)
    copies = sum(kinds)
    assert output.meta.get("inCheckpointTexts", 0) == copies
    assert (COPIES_HEADING in output.text) == bool(copies)
    if copies:
        lines = output.text.split("\n\n")[1].splitlines()
        assert lines.index(COPIES_HEADING) == len(kinds) - copies
