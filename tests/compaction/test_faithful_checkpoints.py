"""Frozen stubs and the state hold only what the conversation said (issue 22).

Summarisers here answer like a small model does: they copy the instruction's example, invent
ids, drop state sections or echo the slice. Code must keep every such literal out of the
checkpoints, and never make a stub of a superseded state alone (docs/compaction.md, section
of the same name).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction import ExtractiveSummarizer, RecallableBackend, SummaryOutput
from dsh.compaction.anchors import Anchor, keyword_line, merge_keyword_lines, parse_keyword_line
from dsh.compaction.base import RegionPlan
from dsh.compaction.model_summarizer import ModelSummarizer
from dsh.compaction.prompts import (
    EXAMPLE_PLACEHOLDERS,
    KEYWORD_EXAMPLE,
    context_for,
    instruction_for,
)
from dsh.compaction.recallable.chunking import fold_checkpoint_chunks
from dsh.compaction.recallable.state_check import check_state
from dsh.compaction.recallable.state_input import fold_state
from dsh.compaction.recallable.texts import (
    junk_reason,
    mark_replaced,
    slice_text,
    superseded_values,
)
from dsh.compaction.summarizer import SummaryTask
from dsh.config import CompactionSettings
from dsh.errors import ProviderError
from dsh.events import is_checkpoint_event, surface_message
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.store import MemoryStore
from dsh.surface import Session, checkpoint_kind, checkpoint_summary_text
from tests.agent.conftest import run
from tests.compaction.test_recallable import assert_layout, engine_for, long_session
from tests.helpers import append_tool_turn, new_session, user_message
from tests.llm.fake_server import Canned, FakeServer, Recorded, json_error, openai_text

SCENARIOS = Path(__file__).parents[2] / "src" / "dsh" / "bench" / "scenarios"
OLD_EXAMPLE = 'Keywords — error: "ValueError: bad port"; path: src/app.py; id: ZEBRA-7731'
PREVIOUS = """## Goal
- ship the importer fix
## Decisions
- keep retries=3
## Current state
- tests red
## Constraints
- no new dependencies
## Next steps
- run the suite"""


def slice_of(session: Session, seqs) -> str:
    """The rendered text of a checkpoint's shadowed conversation events."""
    messages = []
    for seq in seqs:
        event = session.events[seq]
        if not is_checkpoint_event(event):
            message = surface_message(event)
            if message is not None:
                messages.append(message)
    return slice_text(messages)


def keyword_literals(summary: str) -> list[str]:
    line = next((x for x in summary.splitlines() if x.startswith("Keywords")), "")
    return [anchor.text for anchor in parse_keyword_line(line)]


# ---- keyword lines are verified by code -------------------------------------------------------


def test_a_listed_literal_survives_only_if_the_slice_says_it_verbatim():
    source = "User: fix src/importer.py, it raises KeyError: 'row'"
    model = f"{OLD_EXAMPLE}; id: QX-4242; path: src/importer.py; quoted: \"KeyError: 'row'\""
    line = merge_keyword_lines(model, [Anchor("id", "ROW-9")], source=source)
    assert keyword_literals(line) == ["src/importer.py", "ROW-9", "KeyError: 'row'"]


@given(
    st.lists(st.text("abcXYZ-19/.", min_size=1, max_size=8), max_size=6),
    st.lists(st.text("abcXYZ-19/.", min_size=1, max_size=8), max_size=4),
    st.text("abcXYZ-19/. ", max_size=60),
)
def test_every_kept_literal_is_required_or_occurs_in_the_source(listed, required, source):
    model = keyword_line([Anchor("id", text) for text in listed], max_chars=10_000)
    must = [Anchor("path", text) for text in required]
    merged = keyword_literals(merge_keyword_lines(model, must, source=source, max_chars=10_000))
    for text in merged:
        assert text in required or text in source
    for text in required:  # code-extracted anchors stay guaranteed
        assert text in merged
    for text in listed:
        if text in source and text.strip() == text:
            assert text in merged


# ---- prompt examples never leak ---------------------------------------------------------------


def bench_facts() -> list[str]:
    facts = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        for fact in yaml.safe_load(path.read_text()).get("facts", []):
            facts.append(str(fact["anchor"]))
            facts.extend(str(p) for p in fact.get("paraphrases", []))
    return facts


def every_prompt_text() -> list[str]:
    messages = (user_message("hello"), user_message("bye"))
    texts = []
    for kind in ("summary", "stub", "state"):
        for layout in ("compact", "riding"):
            task = SummaryTask(
                kind=kind,  # type: ignore[arg-type]
                messages=messages,
                max_tokens=100,
                previous="P" if kind != "stub" else None,
                focus=None,
                layout=layout,  # type: ignore[arg-type]
                slice_range=(1, 2),
                previous_at=1,
                background="B",
                keyword_lines=("K",),
                recent_stubs=("R",),
            )
            texts.append(instruction_for(task))
            texts.append(context_for(task) or "")
    return texts


def test_no_planted_bench_fact_appears_in_any_prompt_text():
    facts = bench_facts()
    assert "ZEBRA-7731" in facts and len(facts) > 10  # the scenarios were read
    prompts = "\n".join(every_prompt_text()).lower()
    assert KEYWORD_EXAMPLE in "\n".join(every_prompt_text())
    leaked = [fact for fact in facts if fact.lower() in prompts]
    assert leaked == []


def test_an_answer_repeating_the_example_is_junk_unless_the_slice_said_it():
    messages = (user_message("fix the port"),)
    echo = f"Fixed the port.\n{KEYWORD_EXAMPLE}"
    assert junk_reason(echo, messages, 100) == "an echo of the instruction's example"
    said = (user_message(f"usage: tool {EXAMPLE_PLACEHOLDERS[1]} and {KEYWORD_EXAMPLE}"),)
    assert junk_reason(f"Fixed the usage line.\n{EXAMPLE_PLACEHOLDERS[1]}", said, 100) is None


class Scripted:
    """Answers stub and state calls from per-kind queues (then the extractive writer)."""

    name = model = "scripted"

    def __init__(self, stubs=(), states=()) -> None:
        self.answers = {"stub": list(stubs), "state": list(states)}
        self.calls = {"stub": 0, "state": 0}

    async def summarize(self, task):
        self.calls[task.kind] += 1
        queue = self.answers[task.kind]
        if queue:
            return SummaryOutput(text=queue.pop(0), provider="s", model="s")
        return await ExtractiveSummarizer().summarize(task)


def test_a_stub_answer_echoing_the_example_is_asked_once_more_then_used():
    session = long_session(turns=4)
    good = "Read a module.\nKeywords — id: QX-4242"
    summarizer = Scripted(stubs=[KEYWORD_EXAMPLE] + [good] * 20)
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    stubs = [session.events[c.summary_seq].data for c in result.checkpoints if c.kind == "index"]
    assert stubs and stubs[0].degraded is None and stubs[0].summary.startswith("Read a module.")
    assert summarizer.calls["stub"] == len(stubs) + 1  # one retry, for the echo
    assert all("QX-4242" not in s.summary and "<" not in s.summary for s in stubs)


def test_a_stub_whose_retry_is_junk_too_becomes_a_pointer():
    session = long_session(turns=4)
    summarizer = Scripted(stubs=[KEYWORD_EXAMPLE] * 40)
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    stubs = [session.events[c.summary_seq].data for c in result.checkpoints if c.kind == "index"]
    assert stubs and all(s.degraded == "fallback" for s in stubs)
    assert summarizer.calls["stub"] == 2 * len(stubs)


# ---- the state is validated -------------------------------------------------------------------


def test_a_dropped_section_is_merged_from_the_previous_state():
    source = "User: the importer now passes\n" + PREVIOUS
    state = check_state("## Goal\n- ship the importer fix", source=source, previous=PREVIOUS)
    assert state.splitlines() == [
        "## Goal",
        "- ship the importer fix",
        "## Decisions",
        "- keep retries=3",
        "## Current state",
        "- tests red",
        "## Constraints",
        "- no new dependencies",
        "## Next steps",
        "- run the suite",
    ]


def test_an_empty_section_says_so_and_extra_sections_and_a_lead_stay():
    text = "Lead line.\n## Next steps\n\n## Goal\n- g\n## Notes\n- n"
    state = check_state(text, source="", previous=None)
    assert state == (
        "Lead line.\n## Goal\n- g\n## Decisions\n(none)\n## Current state\n(none)\n"
        "## Constraints\n(none)\n## Next steps\n(none)\n## Notes\n- n"
    )


def test_a_state_line_with_an_invented_literal_is_dropped():
    source = "User: set retries=5 in conf/app.toml"
    text = "## Goal\n- tune conf/app.toml\n- track QX-4242\n## Decisions\n- retries=5"
    state = check_state(text, source=source, previous=None)
    assert "QX-4242" not in state
    assert "- tune conf/app.toml" in state and "- retries=5" in state


def test_a_state_line_with_an_invented_count_or_date_is_dropped():
    source = "User: run the tests\nTool result: 12 passed in 0.31s"
    text = (
        "## Goal\n- run the tests\n- 777 tests passed, deadline 2031-07-04\n"
        "## Current state\n- 12 passed"
    )
    state = check_state(text, source=source, previous=None)
    assert "777" not in state and "2031" not in state
    assert "- run the tests" in state and "- 12 passed" in state


def test_a_valid_state_is_kept_byte_for_byte():
    assert check_state(PREVIOUS, source=PREVIOUS, previous=PREVIOUS) == PREVIOUS


@pytest.mark.parametrize(
    ("text", "reason"),
    [("all good", "none of its sections"), (f"## Goal\n{KEYWORD_EXAMPLE}", "example")],
)
def test_a_state_answer_that_is_no_state_is_refused(text, reason):
    with pytest.raises(ProviderError, match=reason):
        check_state(text, source="", previous=None)


def state_region(previous=PREVIOUS):
    task = SummaryTask(
        kind="state", messages=(user_message("go on"),), max_tokens=200, previous=previous
    )
    return RegionPlan(kind="state", shadowed_seqs=(1,), task=task)


def test_a_state_answer_without_sections_is_asked_once_more():
    summarizer = Scripted(states=["The goal is to ship it.", PREVIOUS])
    text = run(fold_state(summarizer, state_region(), 200, None))
    assert text.summary == PREVIOUS and summarizer.calls["state"] == 2


def test_two_bad_state_answers_fail_the_pass():
    summarizer = Scripted(states=["The goal is to ship it.", "still no sections"])
    with pytest.raises(ProviderError, match="none of its sections"):
        run(fold_state(summarizer, state_region(), 200, None))
    assert summarizer.calls["state"] == 2


def test_a_pass_whose_state_drops_sections_keeps_the_previous_content():
    session = long_session(turns=6)
    engine = engine_for(session)
    run(engine.compact_now(window=100_000))
    for i in range(6, 12):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    summarizer = Scripted(states=["## Goal\n- step 0: check ZEBRA-7700 in src/mod_0.py"])
    before = engine_state(session)
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    after = session.events[result.checkpoints[-1].summary_seq].data.summary
    for heading in ("## Decisions", "## Current state", "## Next steps"):
        assert section(after, heading) == section(before, heading) != []


def engine_state(session: Session) -> str:
    seq = next(s for s in reversed(session.nodes) if checkpoint_kind(session, s) == "state")
    text = checkpoint_summary_text(session, seq)
    assert text is not None
    return text


def section(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line.strip() and not line.startswith("[")]


# ---- chunking never makes a stub of checkpoints alone -----------------------------------------


@given(st.lists(st.tuples(st.integers(1, 4), st.booleans()), min_size=1, max_size=12))
def test_no_index_chunk_is_checkpoints_alone_and_the_cover_is_exact(shape):
    chunks, flags, start = [], [], 0
    for size, checkpoints in shape:
        chunks.append((start, start + size))
        flags.extend([checkpoints] * size)
        start += size
    folded = fold_checkpoint_chunks(chunks, flags)
    assert folded[0][0] == 0 and folded[-1][1] == start
    assert all(a[1] == b[0] for a, b in itertools.pairwise(folded))
    assert all(not all(flags[a:b]) for a, b in folded[:-1])
    assert {b for _, b in folded} <= {b for _, b in chunks}


BIG_STATE = "\n".join(
    f"## {name}\n" + "\n".join(f"- {name.lower()} note {i} of the work" for i in range(12))
    for name in ("Goal", "Decisions", "Current state", "Constraints", "Next steps")
)


def test_a_superseded_state_folds_into_the_next_stub_not_a_pointer_of_its_own():
    settings = CompactionSettings(
        backend="recallable", retain_tokens=100, chunk_tokens=800, stub_tokens=100,
        state_max_tokens=600,
    )  # fmt: skip
    session = new_session(MemoryStore())
    summarizer = Scripted(states=[BIG_STATE] * 20)
    backend = RecallableBackend(summarizer, settings)
    engine = engine_for(session, summarizer, settings)
    engine.backend = backend
    folded = 0
    for i in range(6):  # several passes, each superseding the previous state
        for j in range(5):
            append_tool_turn(
                session,
                f"t{i}.{j} QX-{i}{j}1",
                calls=[("read_file", "{}", "x " * 300)],
                final="done " * 350,  # the tail can start here: a large node after the state
            )
        plan = backend.plan(session, retain_tokens=100, focus=None, reason="manual")
        assert plan is not None
        for region in plan.regions[:-1]:
            kinds = [checkpoint_kind(session, s) for s in region.shadowed_seqs]
            assert None in kinds and region.task is not None  # never checkpoints alone
            folded += "state" in kinds
        result = run(engine.run_pass(plan, turn=None))
        for ref in result.checkpoints:
            summary = session.events[ref.summary_seq].data
            assert "recall activity" not in summary.summary
            assert "note 0 of the work" not in summary.summary or ref.kind == "state"
    assert folded >= 3  # the superseded state did fall inside a stub's slice
    assert_layout(session)


def test_a_riding_stub_names_only_its_material_when_a_state_folds_into_it():
    session = long_session(turns=6)
    run(engine_for(session).compact_now(window=100_000))
    for i in range(6, 12):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    backend = RecallableBackend(ExtractiveSummarizer(), engine_for(session).settings)
    plan = backend.plan(session, retain_tokens=300, focus=None, reason="manual")
    assert plan is not None
    first = plan.regions[0]
    assert checkpoint_kind(session, first.shadowed_seqs[0]) == "state"
    assert first.task is not None and first.task.slice_range is not None
    numbered = [s for s in session.nodes if surface_message(session.events[s]) is not None]
    a, b = first.task.slice_range
    named = [seq for seq in numbered[a - 1 : b]]
    assert named == [s for s in first.shadowed_seqs if checkpoint_kind(session, s) is None]
    assert dataclasses.replace(first.task).messages == tuple(
        surface_message(session.events[s]) for s in named
    )


# ---- end to end: a stand-in OpenAI-compatible server answering like a small model ------------


class SmallModelServer(FakeServer):
    """Answers each summariser call from its content: a stub call first gets the instruction's
    example copied back, its retry an answer with invented and copied ids; a state call gets
    ``## Goal`` alone with an invented id. A one-call pass is refused (400), so every region
    gets a call of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def _next(self, recorded: Recorded) -> Canned:
        with self._lock:
            self.requests.append(recorded)
            messages = recorded.body["messages"]
            key = json.dumps(messages, sort_keys=True)
            retry = key in self.seen
            self.seen.add(key)
        last = messages[-1]["content"]
        instruction = last if isinstance(last, str) else json.dumps(last)
        if "=== stub 1 ===" in instruction:
            return json_error(400, {"error": {"message": "too many sections for this model"}})
        if "working-memory state" in instruction:
            return openai_text("## Goal\n- finish QX-9999 for the team\n- keep the modules")
        if not retry:
            return openai_text(f"Read modules.\n{KEYWORD_EXAMPLE}")
        return openai_text(
            "Read a module and answered with its port.\n"
            f"{OLD_EXAMPLE}; config: retries=5; id: QX-4242, ZEBRA-7703, ZEBRA-7700"
        )


def test_every_frozen_stub_of_a_small_model_lists_only_literals_of_its_slice():
    session = long_session(turns=8)
    with SmallModelServer() as server:
        provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", "sk-test")
        summarizer = ModelSummarizer(provider, "m", history=session.events)
        result = run(engine_for(session, summarizer).compact_now(window=100_000))
    assert result is not None
    stubs = [ref for ref in result.checkpoints if ref.kind == "index"]
    assert len(stubs) >= 2
    for ref in stubs:
        summary = session.events[ref.summary_seq].data
        assert summary.degraded is None  # the retry was usable
        source = slice_of(session, ref.shadowed_seqs)
        literals = keyword_literals(summary.summary)
        assert literals and all(text in source for text in literals), (literals, source[:200])
        for invented in ("QX-4242", "ZEBRA-7731", "src/app.py", "retries=5", "<"):
            assert invented not in summary.summary
    state = session.events[result.checkpoints[-1].summary_seq].data.summary
    assert "QX-9999" not in state and "- keep the modules" in state
    for heading in ("## Goal", "## Decisions", "## Current state", "## Constraints"):
        assert heading in state
    stub_calls = [r for r in server.requests if "Index the conversation" in json.dumps(r.body)]
    assert len(stub_calls) == 2 * len(stubs)  # every stub asked once more after the echo
    assert_layout(session)


# ---- superseded values ------------------------------------------------------------------------


def test_a_setting_changed_later_maps_its_old_literals_to_the_newest():
    texts = ["set retries=3 and timeout = 5s", "retries = 3 still", "now retries=5", "retries=5"]
    assert superseded_values(texts) == {"retries=3": "retries=5", "retries = 3": "retries=5"}
    assert superseded_values(["retries=3", "retries = 3"]) == {}  # same value, other spelling


def test_every_line_naming_an_old_value_is_marked_and_others_are_left_alone():
    text = (
        'Keywords — path: conf/app.toml; config: retries=3, "a=1;2", b=4\n'
        "kept retries=30\nset retries=3 today"
    )
    marked = mark_replaced(text, {"retries=3": "retries=5", "a=1;2": "a=2"})
    assert marked.splitlines() == [  # an old literal is listed once, as replaced
        'Keywords — path: conf/app.toml; config: b=4; replaced: retries=3, "a=1;2"',
        "kept retries=30",
        "set retries=3 today (retries=3 → retries=5)",
    ]
    assert parse_keyword_line(marked.splitlines()[0])[-1] == Anchor("replaced", "a=1;2")
    assert mark_replaced(text, {}) == text
    # a line code would not write this way (a model's spelling) keeps every byte, plus the group
    odd = "Keywords — config: retries=3, a=1;2, path C:\\tmp\\x.txt"
    assert mark_replaced(odd, {"retries=3": "retries=5", "a=1;2": "a=2"}) == (
        odd + '; replaced: retries=3, "a=1;2"'
    )


_LITERALS = st.sampled_from(["retries=3", "a=1;2", "port 80", "x.y", "v=1", "v=10", "ZEBRA-7"])


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(
        st.lists(st.one_of(_LITERALS, st.sampled_from(["set", ".", "_", "word", " "])), max_size=6),
        max_size=5,
    ),
    olds=st.lists(_LITERALS, max_size=4, unique=True),
)
def test_marking_finds_the_lines_a_fresh_regex_per_literal_finds(lines, olds):
    """The compiled-once pattern (with a substring check first) marks exactly the lines that
    compiling ``re.escape(old) + "(?![\\w.])"`` afresh for every line marks."""
    text = "\n".join(" ".join(words) for words in lines)
    replaced = {old: old + "0" for old in olds}
    fresh = []
    for line in text.splitlines():
        named = [o for o in replaced if re.search(re.escape(o) + r"(?![\w.])", line)]
        fresh.append(line + "".join(f" ({o} → {replaced[o]})" for o in named))
    expected = "\n".join(fresh) if replaced else text
    assert mark_replaced(text, replaced) == expected


def test_a_value_changed_within_a_pass_is_marked_in_its_stubs_and_its_state():
    session = new_session(MemoryStore())
    append_tool_turn(
        session, "set retries=3 in conf/app.toml", calls=[("read_file", "{}", "x " * 300)]
    )
    for i in range(4):
        append_tool_turn(session, f"step {i}", calls=[("read_file", "{}", f"y{i} " * 200)])
    append_tool_turn(session, "change it: retries=5", calls=[("read_file", "{}", "z " * 300)])
    for i in range(3):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"w{i} " * 200)])
    states = [BIG_STATE.replace("- decisions note 0 of the work", "- retries=3 for the importer")]
    result = run(engine_for(session, Scripted(states=states)).compact_now(window=100_000))
    texts = [session.events[c.summary_seq].data.summary for c in result.checkpoints]
    naming = [line for text in texts for line in text.splitlines() if "retries=3" in line]
    assert len(naming) >= 2  # the first stub's keyword line, and the state's decision
    keyword_lines = [line for line in naming if line.startswith("Keywords")]
    assert keyword_lines and all(line.endswith("replaced: retries=3") for line in keyword_lines)
    assert all(line.count("retries=3") == 1 for line in keyword_lines)
    assert all("(retries=3 → retries=5)" in line for line in naming if line not in keyword_lines)
