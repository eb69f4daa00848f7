"""``dsh recall search`` is bounded as the model's answer is — ``recall.search_limit`` hits
within ``recall.read_budget_chars`` — and a search that leaves hits out ends with one line
saying how many and the command that prints every one (``--limit 0``); ``--limit N`` shows the
first N whole. It printed every hit it was allowed with no size bound, and said only "raise
limit" of the rest."""

from __future__ import annotations

import re
import shlex

import pytest
from click.testing import CliRunner

from dsh.cli.recall import recall
from dsh.recall import HistorySearchTool
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import append_chat_turn, fixed_clock
from tests.recall.builders import bracket, run_tool

QUERY = "deploy id"
TURNS = 40
"""Each turn's prompt and reply hold ``QUERY``: 80 matches, each snippet about 200 characters."""

MORE = re.compile(
    r"^(\d+) more match\(es\) not shown: `(dsh recall search .*--limit 0)` prints every one\.$"
)


@pytest.fixture
def stored(tmp_path, monkeypatch) -> tuple[str, Session]:
    home = tmp_path / "home"
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    store = JsonlStore(home)
    session = Session(store.create(cwd=str(tmp_path)), clock=fixed_clock)
    filler = " ".join(f"word{n}" for n in range(60))
    surface = []
    for n in range(TURNS):
        turn = append_chat_turn(
            session, f"{filler} note {QUERY} D-{n} {filler}", f"{filler} {QUERY} D-{n} {filler}"
        )
        surface += turn.surface
    bracket(session, surface, "deploys noted", compaction_id="k1")
    append_chat_turn(session, "and now?", "done")
    session.close()
    return session.id, Session.open(store, session.id)


def invoke(*args: str):
    return CliRunner().invoke(recall, list(args), catch_exceptions=False)


def hits(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("[c")]


def test_the_default_is_the_models_answer_and_says_how_to_see_the_rest(stored):
    session_id, session = stored
    result = invoke("search", session_id, QUERY)
    assert result.exit_code == 0 and result.stderr == ""
    assert hits(result.stdout) == hits(
        run_tool(HistorySearchTool(), {"query": QUERY}, session).text
    )
    assert len(hits(result.stdout)) == 25  # recall.search_limit
    assert result.stdout.rstrip("\n").splitlines()[-1] == (
        f"55 more match(es) not shown: `dsh recall search {session_id} 'deploy id' --limit 0` "
        "prints every one."
    )


def test_the_default_is_bounded_by_size_as_the_models_answer_is(stored, monkeypatch):
    session_id, session = stored
    monkeypatch.setenv("DSH_RECALL_SEARCH_LIMIT", "200")
    result = invoke("search", session_id, QUERY)
    assert result.exit_code == 0 and result.stderr == ""
    shown = hits(result.stdout)
    tool = run_tool(HistorySearchTool(200, answer_chars=8000), {"query": QUERY}, session)
    assert shown == hits(tool.text)  # the model's answer: as many as fit in 8,000 characters
    assert 1 < len(shown) < 2 * TURNS  # the size bound, not the limit of 200, stopped it
    assert sum(len(line) + 1 for line in shown) <= 8000
    assert f"Showing the first {len(shown)} of {2 * TURNS}, as many as fit" in result.stdout
    last = result.stdout.rstrip("\n").splitlines()[-1]
    more = MORE.match(last)
    assert more is not None, last
    assert int(more[1]) == 2 * TURNS - len(shown)
    assert more[2] == f"dsh recall search {session_id} 'deploy id' --limit 0"
    # the command it names prints every match, and no line about more
    every = invoke(*shlex.split(more[2])[2:])
    assert every.exit_code == 0
    assert len(hits(every.stdout)) == 2 * TURNS
    assert hits(every.stdout)[: len(shown)] == shown
    assert "not shown" not in every.stdout
    assert "Showing" not in every.stdout


def test_the_default_follows_read_budget_chars(stored, monkeypatch):
    session_id, _ = stored
    monkeypatch.setenv("DSH_RECALL_SEARCH_LIMIT", "200")
    wide = hits(invoke("search", session_id, QUERY).stdout)
    monkeypatch.setenv("DSH_RECALL_READ_BUDGET_CHARS", "2000")
    narrow = invoke("search", session_id, QUERY).stdout
    assert 1 <= len(hits(narrow)) < len(wide)
    assert f"{2 * TURNS - len(hits(narrow))} more match(es) not shown" in narrow


def test_a_limit_asked_for_is_shown_whole(stored):
    session_id, _ = stored
    result = invoke("search", session_id, QUERY, "--limit", "50")
    assert result.exit_code == 0
    assert len(hits(result.stdout)) == 50  # past what 8,000 characters hold
    assert (
        "Showing the first 50; use a more specific query, pass --checkpoint, or raise --limit"
        in (result.stdout)
    )
    assert result.stdout.rstrip("\n").splitlines()[-1] == (
        f"30 more match(es) not shown: `dsh recall search {session_id} 'deploy id' --limit 0` "
        "prints every one."
    )


def test_a_scoped_search_names_its_checkpoint_in_the_command(stored):
    session_id, _ = stored
    (checkpoint,) = re.findall(
        r"\[(c\d+) #msg", hits(invoke("search", session_id, QUERY).stdout)[0]
    )
    result = invoke("search", session_id, QUERY, "--checkpoint", checkpoint, "--limit", "3")
    assert result.stdout.rstrip("\n").splitlines()[-1] == (
        f"77 more match(es) not shown: `dsh recall search {session_id} 'deploy id' --checkpoint "
        f"{checkpoint} --limit 0` prints every one."
    )

    # nothing left out: no such line
    whole = invoke("search", session_id, "D-7 ", "--checkpoint", checkpoint)
    assert len(hits(whole.stdout)) == 2 and "not shown" not in whole.stdout


def test_word_matches_are_bounded_and_counted_the_same_way(stored, monkeypatch):
    session_id, _ = stored
    monkeypatch.setenv("DSH_RECALL_SEARCH_LIMIT", "200")
    result = invoke("search", session_id, "deployment identifiers")  # no literal match
    assert "The literal scan found nothing" in result.stdout
    shown = hits(result.stdout)
    assert 1 < len(shown) < 2 * TURNS
    more = MORE.match(result.stdout.rstrip("\n").splitlines()[-1])
    assert more is not None and int(more[1]) == 2 * TURNS - len(shown)
    every = invoke("search", session_id, "deployment identifiers", "--limit", "0")
    assert len(hits(every.stdout)) == 2 * TURNS and "not shown" not in every.stdout


@pytest.mark.parametrize("limit", ["-1", "201"])
def test_a_limit_out_of_range_is_one_line_and_exit_1(stored, limit):
    session_id, _ = stored
    result = CliRunner().invoke(recall, ["search", session_id, QUERY, "--limit", limit])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"dsh: error: INVALID_ARGUMENT: --limit must be 0 (every match) or from 1 to 200, got "
        f"{limit}\n"
    )


def test_a_checkpoint_that_names_none_is_left_out_of_the_command(stored):
    """The search of every checkpoint printed in its place says how to see all of that."""
    session_id, _ = stored
    result = invoke("search", session_id, QUERY, "--checkpoint", "c99999")
    assert result.exit_code == 0
    assert result.stderr.startswith("dsh: warning: CHECKPOINT_NOT_FOUND: no checkpoint c99999")
    assert result.stdout.rstrip("\n").splitlines()[-1] == (
        f"55 more match(es) not shown: `dsh recall search {session_id} 'deploy id' --limit 0` "
        "prints every one."
    )


def test_the_flags_are_named_in_the_advice_only_and_a_leading_dash_query_stays_a_query(
    tmp_path, monkeypatch
):
    """A hit's text and the query keep the model's words ("raise limit"); a query beginning
    with ``-`` follows ``--`` in the command, which prints every match."""
    home = tmp_path / "home"
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    store = JsonlStore(home)
    session = Session(store.create(cwd=str(tmp_path)), clock=fixed_clock)
    surface = []
    for n in range(4):
        surface += append_chat_turn(session, f"-raise limit to {n}", "ok").surface
    bracket(session, surface, "limits", compaction_id="k1")
    append_chat_turn(session, "and now?", "done")
    session.close()
    result = invoke("search", "--limit", "2", "--", session.id, "-raise limit")
    assert result.exit_code == 0
    assert "for '-raise limit'. Showing the first 2;" in result.stdout
    assert "or raise --limit to see more." in result.stdout
    assert hits(result.stdout)[0].endswith("] User: -raise limit to 0")
    last = result.stdout.rstrip("\n").splitlines()[-1]
    assert last == (
        f"2 more match(es) not shown: `dsh recall search --limit 0 -- {session.id} "
        "'-raise limit'` prints every one."
    )
    every = invoke(*shlex.split(last.split("`")[1])[2:])
    assert every.exit_code == 0 and len(hits(every.stdout)) == 4
