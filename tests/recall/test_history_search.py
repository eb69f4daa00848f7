"""``history_search``: the two-hop regression pin, coverage, truncation, hints
(docs/compaction.md, "The two recall tools")."""

from __future__ import annotations

import pytest

from dsh.events import AssistantMessage, StepEnd, StepStart, TurnEnd, TurnEndReason, TurnStart
from dsh.recall import (
    CHECKPOINT_NOT_FOUND,
    INVALID_ARGUMENT,
    NO_COMPACTED_HISTORY,
    NON_AGENT_CALLER,
    ORPHANED_COMPACTION,
    PRIOR_STATE_LABEL,
    HistoryReadTool,
    HistorySearchTool,
    search_history,
)
from dsh.store import MemoryStore
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    new_session,
    user_message,
)
from tests.recall.builders import NEEDLE, bracket, run_tool, two_passes


def search(session, **args):
    return run_tool(HistorySearchTool(), args, session)


def snippet_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[c")]


def test_text_only_under_a_superseded_state_checkpoint_is_found_and_reachable_by_two_hops():
    """THE REGRESSION PIN: pass 1's state checkpoint is shadowed by pass 2's checkpoint; what it
    shadowed (the trailing slice of pass 1) is still found, under the OLD checkpoint id."""
    passes = two_passes()
    session = passes.session
    assert passes.state1.node not in session.nodes  # superseded: off the surface
    assert all(NEEDLE not in str(session.events[s]) for s in session.nodes)  # not in context
    output = search(session, query=NEEDLE.lower())
    assert not output.is_error
    assert output.text.startswith(
        f"Found 1 match(es) across 1 checkpoint(s) (scanned 4) for {NEEDLE.lower()!r}."
    )
    (hit,) = snippet_lines(output.text)
    assert hit == f"[{passes.state1.id} #msg 2] Tool result: migration failed: {NEEDLE} on users"
    assert output.meta == {"scanned": 4, "matched": 1, "truncated": False}
    # hop 1: the newer checkpoint shows the prior state with its footer naming the old id
    newer = run_tool(HistoryReadTool(), {"checkpoint": passes.index2.id}, session)
    assert f"{PRIOR_STATE_LABEL}\n" in newer.text
    assert f"[checkpoint {passes.state1.id}: shadows conversation span" in newer.text
    # hop 2: the old id, at the snippet's #msg, reads the original
    older = run_tool(HistoryReadTool(), {"checkpoint": passes.state1.id, "offset": 2}, session)
    assert older.text.split("\n\n")[1] == f"Tool result: migration failed: {NEEDLE} on users"


def test_the_scan_is_case_insensitive_and_literal():
    passes = two_passes()
    assert search(passes.session, query="MIGRATION FAILED: err_trailing").meta["matched"] == 1
    assert search(passes.session, query="migration.failed").meta["matched"] == 0
    assert search(passes.session, query="ERR_TRAILING_*").meta["matched"] == 0


def test_coverage_counts_matches_and_truncates_to_the_limit_in_log_order():
    passes = two_passes()
    output = search(passes.session, query="users", limit=2)
    assert output.meta == {"scanned": 4, "matched": 4, "truncated": True}
    assert output.text.startswith("Found 4 match(es) across 3 checkpoint(s) (scanned 4)")
    assert "Showing the first 2;" in output.text
    assert [line.split("]")[0] + "]" for line in snippet_lines(output.text)] == [
        f"[{passes.state1.id} #msg 2]",
        f"[{passes.state1.id} #msg 3]",
    ]
    everything = search(passes.session, query="users", limit=200)
    assert everything.meta == {"scanned": 4, "matched": 4, "truncated": False}
    assert len(snippet_lines(everything.text)) == 4
    assert "Showing the first" not in everything.text


def test_the_default_limit_comes_from_the_tool_configuration():
    passes = two_passes()
    output = run_tool(HistorySearchTool(search_limit=1), {"query": "users"}, passes.session)
    assert len(snippet_lines(output.text)) == 1 and output.meta["truncated"] is True
    with_null = run_tool(
        HistorySearchTool(search_limit=1), {"query": "users", "limit": None}, passes.session
    )
    assert with_null.text == output.text


def test_one_snippet_per_matching_message_of_about_200_characters_around_the_hit():
    session = new_session(MemoryStore())
    body = "a" * 500 + " needle here and needle there " + "b" * 500
    turn = append_tool_turn(session, "dump", calls=[("bash", "{}", body)])
    checkpoint = bracket(session, turn.surface, "dumped", compaction_id="k1")
    output = search(session, query="NEEDLE")
    (hit,) = snippet_lines(output.text)
    tag = f"[{checkpoint.id} #msg 2] "
    assert hit.startswith(tag + "…") and hit.endswith("…")
    snippet = hit[len(tag) + 1 : -1]
    assert "needle here" in snippet and 190 <= len(snippet) <= 210
    assert output.meta["matched"] == 1


@pytest.mark.parametrize(
    ("query", "shown"), [("pelican-99", "PELICAN-99"), ("İSTANBUL PELICAN", "İstanbul PELICAN")]
)
def test_a_snippet_shows_its_hit_when_letters_before_it_lower_case_to_two(tmp_path, query, shown):
    """'İ' (dotted capital I, Turkish) lower-cases to two characters, and the hit's place in the
    lower-cased text was used as its place in the original: after 150 of them the snippet showed
    only the text 150 characters further on, never the match."""
    session = new_session(MemoryStore())
    body = "İ" * 150 + " İstanbul PELICAN-99 cleared " + "x" * 300
    turn = append_tool_turn(session, "dump", calls=[("bash", "{}", body)])
    bracket(session, turn.surface, "dumped", compaction_id="k1")
    stored = HistorySearchTool(span_dir=tmp_path)
    for tool in (HistorySearchTool(), stored, HistorySearchTool(span_dir=tmp_path)):
        (hit,) = snippet_lines(run_tool(tool, {"query": query}, session).text)
        assert shown in hit, hit


def test_zero_matches_say_the_scan_is_literal_and_suggest_reading_the_latest_checkpoint():
    passes = two_passes()
    output = search(passes.session, query="no such text anywhere")
    assert not output.is_error
    assert output.meta == {"scanned": 4, "matched": 0, "truncated": False}
    assert output.text.startswith("Found 0 match(es) across 0 checkpoint(s) (scanned 4)")
    assert "literal (exact substring, case-insensitive)" in output.text
    assert f'history_read with checkpoint "{passes.state2.id}" (the most recent one)' in (
        output.text
    )


def test_a_search_can_be_scoped_to_one_checkpoint():
    passes = two_passes()
    scoped = search(passes.session, query="users", checkpoint=passes.index2.id)
    assert scoped.meta == {"scanned": 1, "matched": 1, "truncated": False}
    assert [line.split("]")[0] + "]" for line in snippet_lines(scoped.text)] == [
        f"[{passes.index2.id} #msg 2]"
    ]
    missing = search(passes.session, query="no such text anywhere", checkpoint=passes.index2.id)
    assert missing.meta["matched"] == 0
    assert f'history_read with checkpoint "{passes.index2.id}" (the checkpoint searched)' in (
        missing.text
    )
    assert search(passes.session, query=NEEDLE, checkpoint=passes.state1.id).meta["matched"] == 1


def test_a_scoped_search_that_finds_nothing_there_answers_from_every_other_checkpoint():
    """A real 1.5B model searched the state checkpoint whose footer names the whole pass's
    range, found nothing (the state's own span is the pass's last chunk) and guessed: a scoped
    search with no hit now says so and shows the hits elsewhere."""
    passes = two_passes()
    widened = search(passes.session, query=NEEDLE, checkpoint=passes.index2.id)
    assert widened.text.startswith("Found 0 match(es) across 0 checkpoint(s) (scanned 1) for")
    assert "Every other checkpoint: 1 match(es) across 1 checkpoint(s)" in widened.text
    assert [line.split("]")[0] + "]" for line in snippet_lines(widened.text)] == [
        f"[{passes.state1.id} #msg 2]"
    ]
    assert widened.meta is not None and widened.meta["matched"] == 1
    assert search(passes.session, query=NEEDLE, checkpoint="").meta["matched"] == 1  # as absent


@pytest.mark.parametrize("checkpoint", ["c999999", "c1"])
def test_a_checkpoint_id_that_names_none_is_not_found_with_the_search_of_every_checkpoint(
    checkpoint: str,
) -> None:
    """Qwen2.5-Coder 1.5B passed checkpoint "c130", the seq of a state checkpoint's message, got
    CHECKPOINT_NOT_FOUND and gave up; the id only narrows a search, so the error carries it."""
    passes = two_passes()
    everywhere = search(passes.session, query=NEEDLE)
    guessed = search(passes.session, query=NEEDLE, checkpoint=checkpoint)
    assert guessed.is_error and guessed.code == CHECKPOINT_NOT_FOUND
    assert f"no checkpoint {checkpoint}: " in guessed.text
    assert "every checkpoint was searched instead." in guessed.text
    assert guessed.text.endswith(everywhere.text)


def test_a_session_without_compaction_says_there_is_no_compacted_history_yet():
    session = new_session(MemoryStore())
    append_chat_turn(session, "hello", "hi")
    output = search(session, query="hello")
    assert not output.is_error
    assert output.text.startswith(NO_COMPACTED_HISTORY)
    assert output.meta == {"scanned": 0, "matched": 0, "truncated": False}
    scoped = search(session, query="hello", checkpoint="c3")
    assert scoped.is_error and scoped.code == CHECKPOINT_NOT_FOUND
    assert NO_COMPACTED_HISTORY in scoped.text


def test_spans_of_unfinished_or_failed_compactions_are_not_searched():
    session = new_session(MemoryStore())
    first = append_chat_turn(session, "secret alpha", "ok")
    bracket(session, first.surface, "s", compaction_id="k1", end_error="boom", with_replace=False)
    output = search(session, query="alpha")
    assert output.text.startswith(NO_COMPACTED_HISTORY)
    done = bracket(session, first.surface, "s", compaction_id="k2")
    assert search(session, query="alpha").meta == {"scanned": 1, "matched": 1, "truncated": False}
    unfinished = bracket(
        session,
        [done.node, *append_chat_turn(session, "beta").surface],
        "s2",
        compaction_id="k3",
        with_end=False,
    )
    assert search(session, query="beta").meta["matched"] == 0
    scoped = search(session, query="beta", checkpoint=unfinished.id)
    assert scoped.is_error and scoped.code == ORPHANED_COMPACTION


@pytest.mark.parametrize("query", ["", "   ", None, 5])
def test_an_empty_or_missing_query_is_an_invalid_argument(query):
    output = search(two_passes().session, query=query)
    assert output.is_error and output.code == INVALID_ARGUMENT
    assert "query must be a non-empty string" in output.text


def test_a_query_over_1000_characters_is_refused_without_being_repeated():
    """A pasted page as the query: no message holds it, and echoing it back would put it into
    the context twice; a query of exactly the limit is searched."""
    session = two_passes().session
    output = search(session, query="users " * 200)
    assert output.is_error and output.code == INVALID_ARGUMENT
    assert "query is 1200 characters; look for a fragment of at most 1000" in output.text
    assert len(output.text) < 300
    assert not search(session, query="u" * 1000).is_error


@pytest.mark.parametrize("limit", [0, 201, -3, True, "5", 2.0])
def test_a_limit_outside_1_to_200_is_an_invalid_argument(limit):
    output = search(two_passes().session, query="users", limit=limit)
    assert output.is_error and output.code == INVALID_ARGUMENT
    assert "limit must be an integer from 1 to 200" in output.text


def test_a_malformed_checkpoint_scope_is_an_invalid_argument():
    output = search(two_passes().session, query="users", checkpoint="latest")
    assert output.is_error and output.code == INVALID_ARGUMENT


@pytest.mark.parametrize("caller", ["cli", "human"])
def test_a_non_agent_caller_is_refused(caller):
    passes = two_passes()
    output = run_tool(HistorySearchTool(), {"query": "users"}, passes.session, caller=caller)
    assert output.is_error and output.code == NON_AGENT_CALLER


@pytest.mark.parametrize("limit", [0, 201])
def test_the_configured_limit_must_be_in_range(limit):
    with pytest.raises(ValueError, match="search_limit"):
        HistorySearchTool(search_limit=limit)


def test_the_function_and_the_tool_give_the_same_answer():
    passes = two_passes()
    direct = search_history(passes.session.events, "users", limit=25)
    assert search(passes.session, query="users") == direct


def test_a_fact_stated_only_in_reasoning_is_found_under_its_label():
    session = new_session(MemoryStore())
    session.append(TurnStart(turn=1))
    session.append(StepStart(turn=1, step=1))
    user = session.append(user_message("which port?")).seq
    reply = assistant_message("it is configured", reasoning="the config says PORT_REASONED_8731")
    said = session.append(AssistantMessage(turn=1, step=1, message=reply)).seq
    session.append(StepEnd(turn=1, step=1))
    session.append(TurnEnd(turn=1, reason=TurnEndReason(kind="completed")))
    state = bracket(session, [user, said], "asked about the port", compaction_id="cmp-r")
    output = search(session, query="port_reasoned_8731")
    (hit,) = snippet_lines(output.text)
    assert hit.startswith(f"[{state.id} #msg 1] Assistant (reasoning): the config says")
