"""``dsh recall search|read`` print what the model gets, from a JSONL session on disk — with the
hints that name the model's tool naming the CLI command instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.recall import recall
from dsh.recall import HistoryReadTool, HistorySearchTool
from dsh.store import JsonlStore, span_cache_path
from dsh.surface import Session
from tests.helpers import fixed_clock
from tests.recall.builders import NEEDLE, TwoPasses, run_tool, two_passes


@pytest.fixture
def stored(tmp_path, monkeypatch) -> tuple[str, TwoPasses, Session]:
    """A compacted session written to ``$DSH_HOME`` as JSONL, then reopened read-only."""
    home = tmp_path / "home"
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    store = JsonlStore(home)
    passes = two_passes(Session(store.create(cwd=str(tmp_path)), clock=fixed_clock))
    passes.session.close()
    reopened = Session.open(store, passes.session.id)
    return passes.session.id, passes, reopened


def invoke(*args: str):
    return CliRunner().invoke(recall, list(args), catch_exceptions=False)


SEARCH_HINT = (
    "Read a match in context with `dsh recall read {id} CHECKPOINT --offset N` "
    "(N = the #msg number).\n"
)


def same_but_hint(printed: str, tool_text: str, hint: str) -> bool:
    """``printed`` is ``tool_text`` with its last paragraph (the tool's hint) replaced by
    ``hint``."""
    return printed == tool_text.rpartition("\n\n")[0] + "\n\n" + hint


def test_search_prints_the_text_history_search_returns(stored):
    session_id, _, session = stored
    result = invoke("search", session_id, NEEDLE)
    assert result.exit_code == 0
    expected = run_tool(HistorySearchTool(), {"query": NEEDLE}, session).text
    assert same_but_hint(result.stdout, expected, SEARCH_HINT.format(id=session_id))
    assert "history_read" not in result.stdout
    assert result.stderr == ""


def test_search_honours_checkpoint_and_limit(stored):
    session_id, passes, session = stored
    result = invoke("search", session_id, "users", "--checkpoint", passes.state1.id, "--limit", "1")
    assert result.exit_code == 0
    expected = run_tool(
        HistorySearchTool(),
        {"query": "users", "checkpoint": passes.state1.id, "limit": 1},
        session,
    ).text
    # the model's words for its arguments name the flags; the last line, the hit left out
    expected = expected.replace("pass a checkpoint", "pass --checkpoint")
    expected = expected.replace("raise limit", "raise --limit")
    more = (
        f"\n1 more match(es) not shown: `dsh recall search {session_id} users --checkpoint "
        f"{passes.state1.id} --limit 0` prints every one.\n"
    )
    assert same_but_hint(result.stdout, expected, SEARCH_HINT.format(id=session_id) + more)
    assert (
        "Showing the first 1; use a more specific query, pass --checkpoint, or raise --limit"
        in (result.stdout)
    )


def test_search_takes_its_default_limit_from_the_recall_config(stored, monkeypatch):
    session_id, _, session = stored
    monkeypatch.setenv("DSH_RECALL_SEARCH_LIMIT", "2")
    result = invoke("search", session_id, "users")
    expected = run_tool(HistorySearchTool(search_limit=2), {"query": "users"}, session).text
    expected = expected.replace("pass a checkpoint", "pass --checkpoint")
    expected = expected.replace("raise limit", "raise --limit")
    more = (
        f"\n2 more match(es) not shown: `dsh recall search {session_id} users --limit 0` prints "
        "every one.\n"
    )
    assert same_but_hint(result.stdout, expected, SEARCH_HINT.format(id=session_id) + more)


def test_read_prints_the_text_history_read_returns_and_follows_the_offset(stored):
    session_id, passes, session = stored
    for offset in (0, 2):
        result = invoke("read", session_id, passes.state1.id, "--offset", str(offset))
        assert result.exit_code == 0
        expected = run_tool(
            HistoryReadTool(), {"checkpoint": passes.state1.id, "offset": offset}, session
        ).text
        assert result.stdout == expected + "\n"
    assert NEEDLE in invoke("read", session_id, passes.state1.id).stdout


def test_read_pages_by_the_configured_budget(stored, monkeypatch):
    session_id, passes, session = stored
    monkeypatch.setenv("DSH_RECALL_READ_BUDGET_CHARS", "60")
    result = invoke("read", session_id, passes.state1.id)
    expected = run_tool(
        HistoryReadTool(read_budget_chars=60), {"checkpoint": passes.state1.id}, session
    ).text
    checkpoint = passes.state1.id
    hint = (
        f"[Continuation cursor: offset=1 — run `dsh recall read {session_id} {checkpoint} "
        "--offset 1` for more]\n"
    )
    assert same_but_hint(result.stdout, expected, hint)
    assert "history_read" not in result.stdout


def test_the_session_id_may_be_a_unique_prefix(stored):
    session_id, passes, _ = stored
    full = invoke("read", session_id, passes.index2.id).stdout
    assert invoke("read", session_id[:-3], passes.index2.id).stdout == full


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("read", "{id}", "latest"), "dsh: error: INVALID_ARGUMENT: checkpoint must be an id"),
        (("read", "{id}", "c2"), "dsh: error: CHECKPOINT_NOT_FOUND: no checkpoint c2:"),
        (("read", "{id}", "{start}"), "dsh: error: ORPHANED_COMPACTION: c"),
        (("read", "{id}", "{state1}", "--offset", "-1"), "dsh: error: INVALID_OFFSET: offset"),
        (("search", "{id}", ""), "dsh: error: INVALID_ARGUMENT: query must be"),
        (("search", "{id}", "x", "--limit", "-1"), "dsh: error: INVALID_ARGUMENT: --limit must be"),
    ],
)
def test_a_typed_error_prints_one_line_with_its_code_and_exits_1(stored, args, line):
    session_id, passes, _ = stored
    values = {"id": session_id, "start": f"c{passes.state1.start}", "state1": passes.state1.id}
    result = invoke(*(a.format(**values) for a in args))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(line)
    assert result.stderr.count("\n") == 1


def test_a_checkpoint_that_names_none_prints_the_search_of_every_checkpoint_with_a_note(stored):
    """``--checkpoint c999``: the model's ``history_search`` gets CHECKPOINT_NOT_FOUND with the
    search of every checkpoint; the command printed that answer as one ``dsh: error:`` line cut
    at 300 characters, stdout empty, and exited 1. Now the search is on stdout, as without
    ``--checkpoint``, after one warning that says why."""
    session_id, _, session = stored
    result = invoke("search", session_id, NEEDLE, "--checkpoint", "c999")
    assert result.exit_code == 0
    everywhere = run_tool(HistorySearchTool(), {"query": NEEDLE}, session).text
    assert same_but_hint(result.stdout, everywhere, SEARCH_HINT.format(id=session_id))
    model = run_tool(HistorySearchTool(), {"query": NEEDLE, "checkpoint": "c999"}, session)
    why = model.text.partition("\n")[0].removesuffix(".")  # the note the model's answer opens with
    assert result.stderr == f"dsh: warning: {why}\n"
    assert why.startswith("CHECKPOINT_NOT_FOUND: no checkpoint c999: ")
    assert why.endswith("; every checkpoint was searched instead")


def test_an_unknown_session_is_a_one_line_error(stored):
    result = invoke("read", "no-such-session", "c1")
    assert result.exit_code == 1
    assert result.stderr.startswith("dsh: error: no session 'no-such-session'")


def test_the_cli_never_writes_to_the_session(stored, tmp_path):
    session_id, passes, session = stored
    log = next((tmp_path / "home").rglob("session.jsonl"))
    before = log.read_bytes()
    invoke("search", session_id, "users")
    invoke("read", session_id, passes.state2.id)
    assert log.read_bytes() == before
    assert len(session.events) == len(passes.session.events)


def test_a_torn_tail_is_reported_as_a_warning_and_the_answer_still_printed(stored, tmp_path):
    session_id, passes, session = stored
    log = next((tmp_path / "home").rglob("session.jsonl"))
    with log.open("ab") as handle:
        handle.write(b'{"type":"turn/start","seq"')
    result = invoke("read", session_id, passes.state1.id)
    assert result.exit_code == 0
    assert result.stderr.startswith("dsh: warning: ")
    expected = run_tool(HistoryReadTool(), {"checkpoint": passes.state1.id}, session).text
    assert result.stdout == expected + "\n"


def test_search_keeps_the_lower_cased_spans_in_the_sessions_span_file(stored, tmp_path):
    session_id, _, _ = stored
    first = invoke("search", session_id, NEEDLE)
    path = span_cache_path(Path(os.environ["DSH_HOME"]), session_id)
    assert path.is_file() and path.stat().st_size > 0
    stored_bytes = path.read_bytes()
    again = invoke("search", session_id, NEEDLE)  # a new process would read, not render
    assert again.output == first.output
    assert path.read_bytes() == stored_bytes  # nothing appended: every span was found


def test_search_by_words_prints_the_tools_word_hits_with_the_cli_hint(stored):
    session_id, _, session = stored
    query = "failing migrations"  # nothing literal: "migration failed" was written
    result = invoke("search", session_id, query)
    assert result.exit_code == 0
    expected = run_tool(HistorySearchTool(), {"query": query}, session).text
    assert "the query's words were looked for on their own" in expected
    assert same_but_hint(result.stdout, expected, SEARCH_HINT.format(id=session_id))
