"""The extractive summariser: summary, stub and state written by code (docs/compaction.md, "The
basic backend" and "Layout"; docs/architecture.md, "Keyless everything")."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction.anchors import KEYWORD_PREFIX, parse_keyword_line, rarest_anchors
from dsh.compaction.extractive import (
    ANSWERED,
    NOTHING,
    STATE_SECTIONS,
    SUMMARY_SECTIONS,
    ExtractiveSummarizer,
    parse_sections,
)
from dsh.compaction.summarizer import Summarizer, SummaryOutput, SummaryTask, TaskKind
from dsh.events import Message
from dsh.surface import text_tokens
from dsh.transcript import render_message
from tests.helpers import (
    assistant_message,
    checkpoint_message,
    tool_call_block,
    tool_result_message,
    user_message,
)


def summarize(task: SummaryTask) -> SummaryOutput:
    return asyncio.run(ExtractiveSummarizer().summarize(task))


def text_of(
    kind: TaskKind, messages: tuple[Message, ...], *, max_tokens: int = 800, **fields: object
) -> str:
    task = SummaryTask(kind=kind, messages=messages, max_tokens=max_tokens, **fields)
    return summarize(task).text


def debugging_slice() -> tuple[Message, ...]:
    """A small realistic slice: a failing test, a config read, a fix, a follow-up prompt."""
    return (
        user_message(
            "The server crashes on start for ticket ZEBRA-7731. Fix it.\n"
            "You must not change the public API."
        ),
        assistant_message(
            "Let me run the tests.",
            tool_calls=[tool_call_block("c1", "bash", '{"command":"pytest -q"}')],
        ),
        tool_result_message(
            "c1",
            "FAILED tests/test_server.py::test_bind_port - ValueError: port must be > 0\n"
            "1 failed, 12 passed in 0.42s",
            is_error=True,
        ),
        assistant_message(
            tool_calls=[tool_call_block("c2", "read_file", '{"path":"conf/server.toml"}')]
        ),
        tool_result_message("c2", "[server]\nport = 0\nretries = 3"),
        assistant_message(
            "I decided to read the port from PORT and use retries = 5.",
            tool_calls=[tool_call_block("c3", "edit_file", '{"path":"conf/server.toml"}')],
        ),
        tool_result_message("c3", "edited conf/server.toml"),
        assistant_message(
            "Fixed the port check in src/app/server.py. All 13 tests pass now.\n"
            "TODO: document the PORT variable."
        ),
        user_message("Good. Now add a health endpoint on :8080/health."),
    )


def corpus_of(messages: tuple[Message, ...]) -> tuple[str, ...]:
    return tuple(render_message(m) for m in messages)


def headings(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def bullets(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


# ---- the seam -------------------------------------------------------------------------------


def test_it_is_a_summarizer_answering_as_the_extractive_provider():
    summarizer: Summarizer = ExtractiveSummarizer()
    assert (summarizer.name, summarizer.model) == ("extractive", "extractive")
    output = summarize(SummaryTask(kind="summary", messages=debugging_slice(), max_tokens=800))
    assert (output.provider, output.model) == ("extractive", "extractive")
    assert output.usage is None and output.raw_output is None and not output.truncated


@pytest.mark.parametrize("kind", ["summary", "stub", "state"])
def test_every_kind_is_byte_identical_across_runs(kind: TaskKind):
    messages = debugging_slice()
    first = text_of(kind, messages, corpus=corpus_of(messages), focus="port")
    second = text_of(kind, messages, corpus=corpus_of(messages), focus="port")
    assert first.encode() == second.encode()


@pytest.mark.parametrize("kind", ["summary", "stub", "state"])
def test_empty_messages_give_a_short_text_without_raising(kind: TaskKind):
    assert text_of(kind, ()) == NOTHING


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["user", "assistant", "tool"]), st.text(max_size=120)),
        max_size=8,
    ),
    st.sampled_from(["summary", "stub", "state"]),
)
def test_any_slice_gives_text_within_budget_without_raising(turns, kind):
    builders = {
        "user": user_message,
        "assistant": assistant_message,
        "tool": lambda text: tool_result_message("c1", text),
    }
    messages = tuple(builders[role](text) for role, text in turns)
    text = text_of(kind, messages, max_tokens=200, previous="## Goal\n- keep going")
    assert text.strip()
    assert text_tokens(text) <= 200


# ---- summary --------------------------------------------------------------------------------


def test_summary_has_the_seven_headings_in_order_and_keeps_literals_verbatim():
    text = text_of("summary", debugging_slice())
    assert headings(text) == list(SUMMARY_SECTIONS)
    for literal in (
        "ZEBRA-7731",
        "ValueError: port must be > 0",
        "FAILED tests/test_server.py::test_bind_port",
        "conf/server.toml",
        "src/app/server.py",
        "retries = 5",
    ):
        assert literal in text
    sections = parse_sections(text)
    assert sections["files and code"][0] == "tests/test_server.py"
    assert "conf/server.toml (read_file, edit_file)" in sections["files and code"]
    assert sections["current state"] == ["Fixed the port check in src/app/server.py."]
    assert sections["next step"] == ["Good. Now add a health endpoint on :8080/health."]
    assert sections["pending work"] == ["TODO: document the PORT variable."]
    assert "retries = 3" not in text  # superseded by the newer retries = 5


def test_summary_marks_empty_sections_none():
    text = text_of("summary", (user_message("hello there"),))
    assert "## Errors and fixes\n(none)" in text
    assert parse_sections(text)["request and intent"] == ["hello there"]


def test_summary_merges_the_previous_summary_bullet_by_bullet():
    older = text_of("summary", debugging_slice())
    newer = (
        user_message("Also rename the flag to --listen for JOB-42."),
        assistant_message("Renamed it in src/app/cli.py."),
    )
    text = text_of("summary", newer, previous=older)
    assert headings(text) == list(SUMMARY_SECTIONS)
    for bullet in bullets(older):
        if bullet in (
            "- Fixed the port check in src/app/server.py.",
            "- Good. Now add a health endpoint on :8080/health.",
        ):
            continue  # the previous current state and next step give way to the new ones
        assert bullets(text).count(bullet) == 1
    requests = parse_sections(text)["request and intent"]
    assert requests[-1] == "Also rename the flag to --listen for JOB-42."  # newer after older
    assert parse_sections(text)["current state"] == ["Renamed it in src/app/cli.py."]
    assert older not in text


def test_summary_merge_of_an_identical_slice_duplicates_nothing():
    older = text_of("summary", debugging_slice())
    again = text_of("summary", debugging_slice(), previous=older)
    assert again == older


def test_summary_reads_a_checkpoint_in_the_slice_as_the_merge_base_not_as_material():
    older = text_of("summary", debugging_slice())
    framed = f"[preamble]\n<compacted-summary>\n{older}\n</compacted-summary>"
    messages = (checkpoint_message(framed, "cmp-1"), user_message("Next: JOB-42."))
    text = text_of("summary", messages)
    assert headings(text) == list(SUMMARY_SECTIONS)
    assert text.count("ZEBRA-7731") == older.count("ZEBRA-7731")
    assert "compacted-summary" not in text and "[preamble]" not in text


def test_summary_focus_comes_first_and_orders_matching_bullets_first():
    text = text_of("summary", debugging_slice(), focus="health endpoint")
    assert headings(text) == ["Focus", *SUMMARY_SECTIONS]
    assert text.startswith("## Focus\nhealth endpoint\n")
    requests = parse_sections(text)["request and intent"]
    assert requests[0] == "Good. Now add a health endpoint on :8080/health."


def test_summary_fits_max_tokens_for_a_huge_slice_dropping_oldest_bullets():
    messages: list[Message] = []
    for i in range(400):
        messages.append(user_message(f"Look at src/pkg/module_{i}.py for ticket JOB-{1000 + i}."))
        messages.append(assistant_message(f"Found retries_{i} = {i} in conf/app_{i}.toml."))
    text = text_of("summary", tuple(messages), max_tokens=600)
    assert text_tokens(text) <= 600
    assert headings(text) == list(SUMMARY_SECTIONS)
    assert "JOB-1399" in text  # the newest survive
    assert "JOB-1000" not in text  # the oldest went first


# ---- stub -----------------------------------------------------------------------------------


def test_stub_has_at_most_three_lines_then_a_keyword_line_with_the_rarest_literal():
    messages = debugging_slice()
    noise = tuple("pytest -q tests/test_server.py conf/server.toml" for _ in range(20))
    corpus = corpus_of(messages) + noise
    text = text_of("stub", messages, corpus=corpus, max_tokens=200)
    lines = text.splitlines()
    assert 2 <= len(lines) <= 4
    assert lines[-1].startswith(KEYWORD_PREFIX)
    assert lines[0].startswith("User asked: The server crashes on start for ticket ZEBRA-7731.")
    assert lines[1].startswith("Assistant: 3 tool calls (bash, read_file, edit_file);")
    assert lines[2] == "Outcome: edited conf/server.toml"
    slice_text = "\n\n".join(corpus_of(messages))
    rarest = rarest_anchors(slice_text, corpus)[0]
    assert rarest in parse_keyword_line(lines[-1])
    keywords = {a.text for a in parse_keyword_line(lines[-1])}
    assert "read_file" not in keywords  # tool names are no ids
    assert text_tokens(text) <= 200


def test_stub_keyword_line_is_the_same_for_a_reordered_corpus():
    messages = debugging_slice()
    corpus = (*corpus_of(messages), "ZEBRA-7731 again", "conf/server.toml and conf/server.toml")
    forward = text_of("stub", messages, corpus=corpus)
    backward = text_of("stub", messages, corpus=tuple(reversed(corpus)))
    assert forward == backward


def test_stub_never_copies_background_keyword_lines_or_recent_stubs():
    text = text_of(
        "stub",
        debugging_slice(),
        background="## Goal\n- ship BACKGROUND-9001",
        keyword_lines=("Keywords — id: INDEXED-1234",),
        recent_stubs=("User asked: about RECENT-5555",),
    )
    for foreign in ("BACKGROUND-9001", "INDEXED-1234", "RECENT-5555", "## Goal"):
        assert foreign not in text


def test_stub_skips_a_folded_state_checkpoint_in_its_slice():
    messages = (checkpoint_message("## Goal\n- OLDSTATE-77", "cmp-1"), *debugging_slice())
    assert "OLDSTATE-77" not in text_of("stub", messages)


def test_stub_fits_a_small_budget_keeping_its_keyword_line():
    text = text_of("stub", debugging_slice(), max_tokens=60)
    assert text_tokens(text) <= 60
    assert text.splitlines()[-1].startswith(KEYWORD_PREFIX)


# ---- state ----------------------------------------------------------------------------------


def test_state_has_its_five_sections_from_the_slice():
    text = text_of("state", debugging_slice())
    assert headings(text) == list(STATE_SECTIONS)
    sections = parse_sections(text)
    assert sections["goal"] == ["The server crashes on start for ticket ZEBRA-7731. Fix it."]
    assert sections["constraints"] == ["You must not change the public API."]
    assert "I decided to read the port from PORT and use retries = 5." in sections["decisions"]
    assert sections["current state"] == [
        "Fixed the port check in src/app/server.py. All 13 tests pass now.",
        "TODO: document the PORT variable.",
    ]
    assert sections["next steps"] == ["Good. Now add a health endpoint on :8080/health."]


def test_state_lists_no_answered_request_under_next_steps():
    """A slice ending with the answer to its last request leaves nothing open: listing that
    request under Next steps made Qwen2.5-Coder 1.5B answer it again after a pass at the start
    of the next turn, instead of the prompt that followed the state."""
    messages = (
        user_message("Explain what the decorator in src/app/cache.py does."),
        assistant_message(tool_calls=[tool_call_block("c1", "read_file", '{"path":"x.py"}')]),
        tool_result_message("c1", "def cached(fn): ..."),
        assistant_message("It memoises each call of the wrapped function by its arguments."),
    )
    sections = parse_sections(text_of("state", messages))
    assert sections["next steps"] == [ANSWERED]
    assert "decorator" in sections["goal"][0]


def test_state_keeps_a_request_still_worked_on_under_next_steps():
    messages = (
        user_message("Run the suite and fix what fails."),
        assistant_message(
            "Running it.", tool_calls=[tool_call_block("c1", "bash", '{"command":"pytest"}')]
        ),
        tool_result_message("c1", "1 failed", is_error=True),
    )
    sections = parse_sections(text_of("state", messages))
    assert sections["next steps"] == ["Run the suite and fix what fails."]


def test_an_answered_slice_replaces_the_previous_states_next_steps():
    previous = text_of("state", (user_message("Add a health endpoint on :8080/health."),))
    assert parse_sections(previous)["next steps"] == ["Add a health endpoint on :8080/health."]
    newer = (assistant_message("Added GET /health; it answers 200 with the version."),)
    sections = parse_sections(text_of("state", newer, previous=previous))
    assert sections["next steps"] == [ANSWERED]
    assert sections["goal"] == ["Add a health endpoint on :8080/health."]


def test_state_supersedes_retries_3_with_a_later_retries_5():
    messages = (
        user_message("Set retries = 3 in conf/app.toml for now."),
        assistant_message("Done, retries = 3 is set."),
        user_message("Too low. Use retries = 5 instead."),
        assistant_message("Switched to retries = 5."),
    )
    text = text_of("state", messages)
    assert "retries = 3" not in text
    assert "retries = 5" in text


def test_state_supersedes_a_value_held_by_the_previous_state():
    previous = text_of("state", (user_message("Tune the client. Set timeout = 10s."),))
    assert "timeout = 10s" in previous
    text = text_of("state", (assistant_message("Raised it: timeout = 30s."),), previous=previous)
    assert "timeout = 10s" not in text
    assert "timeout = 30s" in text


def test_state_drops_a_decision_a_later_one_reverses_in_prose():
    previous = text_of(
        "state", (assistant_message("Decision: we will cut the fix from release/2025.03."),)
    )
    assert "release/2025.03" in previous
    reversal = "Change of plan: we will cut the fix from release/2025.04 instead."
    text = text_of("state", (assistant_message(reversal),), previous=previous)
    assert "release/2025.03" not in text
    assert reversal in text


def test_state_keeps_decisions_a_reversal_is_not_about():
    messages = (
        assistant_message("We will use pytest-xdist for the suite in ci/run.sh."),
        assistant_message("Decision: we will cut the fix from release/2025.03."),
        assistant_message("Instead of mocking, we will use a real SQLite file in tests/db.py."),
    )
    text = text_of("state", messages)
    assert "release/2025.03" in text and "ci/run.sh" in text and "tests/db.py" in text


def test_a_reversal_that_names_the_same_literals_drops_nothing():
    messages = (
        assistant_message("We will deploy from release/2025.03 on Monday."),
        assistant_message("We will deploy from release/2025.03 on Tuesday instead."),
    )
    text = text_of("state", messages)
    assert "Monday" in text and "Tuesday" in text


def test_state_merges_the_previous_state_keeping_its_goal():
    previous = text_of("state", debugging_slice())
    newer = (
        user_message("Never log the PORT value. Add the health endpoint next."),
        assistant_message("I will use a plain GET handler at /health."),
    )
    text = text_of("state", newer, previous=previous)
    sections = parse_sections(text)
    assert sections["goal"] == parse_sections(previous)["goal"]
    assert sections["constraints"] == [
        "You must not change the public API.",
        "Never log the PORT value.",
    ]
    assert sections["decisions"][-1] == "I will use a plain GET handler at /health."
    assert sections["current state"] == ["I will use a plain GET handler at /health."]
    assert headings(text) == list(STATE_SECTIONS)
    assert text.count("## Goal") == 1


def test_state_is_capped_at_max_tokens():
    messages = tuple(
        assistant_message(f"I decided to use option_{i} with limit_{i} = {i} for JOB-{i}.")
        for i in range(300)
    )
    text = text_of("state", messages, max_tokens=300)
    assert text_tokens(text) <= 300
    assert headings(text) == list(STATE_SECTIONS)
    assert "JOB-299" in text and "JOB-0." not in text


def test_state_without_messages_keeps_the_previous_state():
    previous = text_of("state", debugging_slice())
    assert text_of("state", (), previous=previous) == previous
