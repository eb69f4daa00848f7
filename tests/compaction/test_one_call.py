"""One riding call per pass (docs/compaction.md, "Summariser calls ride the conversation's
cache"; issue 12, lever a).

When every model region of a pass rides the conversation's cache, the whole pass is one call:
the conversation as sent plus one instruction naming every slice; the answer's labelled sections
are split and checked part by part. A junk section degrades only its stub; a bad state section
gets a call of its own; the pass goes call by call when the answer could not fit or the call
fails.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent import Agent, AgentConfig
from dsh.agent.hooks import compaction_hooks
from dsh.compaction import (
    CompactionEngine,
    CompactionError,
    ExtractiveSummarizer,
    ModelSummarizer,
    RecallableBackend,
    SummaryOutput,
    build_summary_request,
)
from dsh.compaction.model_summarizer import as_transcript, output_budget
from dsh.compaction.prompts import (
    join_pass_answer,
    pass_labels,
    pass_marker,
    split_pass_answer,
)
from dsh.compaction.recallable.one_call import compact_pass_task, pass_batches, pass_task
from dsh.compaction.recallable.riding import sent_prefix
from dsh.compaction.recallable.state_input import request_tokens
from dsh.config import CompactionSettings
from dsh.events import CompactionSummaryEvent, encode_event
from dsh.llm.replay import ReplayProvider
from dsh.llm.scripted import ScriptedProvider
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools
from tests.agent.conftest import Harness, run
from tests.compaction.test_cache_riding import RouteSummarizer, _loop, _wire, engine_passes
from tests.compaction.test_recallable import SETTINGS, assert_layout, engine_for, long_session
from tests.helpers import (
    assistant_message,
    fixed_clock,
    tool_call_block,
    tool_result_message,
    user_message,
)


class Sections:
    """Answers a pass task with the extractive sections, each passed through ``edit(label,
    text)`` (return None to leave the section out); other tasks get the extractive text."""

    name = model = "sections"

    def __init__(self, edit=None, *, fail_kinds=(), max_output_tokens=None) -> None:
        self.edit = edit or (lambda label, text: text)
        self.fail_kinds = set(fail_kinds)
        self.max_output_tokens = max_output_tokens
        self.tasks = []

    async def summarize(self, task):
        self.tasks.append(task)
        if task.kind in self.fail_kinds:
            raise RuntimeError(f"{task.kind} call failed")
        if task.kind != "pass":
            return await ExtractiveSummarizer().summarize(task)
        sections = []
        for label, part in zip(pass_labels(task), task.parts, strict=True):
            text = self.edit(label, (await ExtractiveSummarizer().summarize(part)).text)
            if text is not None:
                sections.append((label, text))
        answer = "Here are the sections.\n" + join_pass_answer(sections)
        return SummaryOutput(answer, "sections", "sections", raw_output=answer)


def _summaries(session: Session, result) -> list:
    return [session.events[c.summary_seq].data for c in result.checkpoints]


# ---- the one call --------------------------------------------------------------------------


def test_a_pass_with_stubs_and_a_state_is_one_call_and_lands_the_same_layout():
    session = long_session()
    summarizer = Sections()
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    kinds = [c.kind for c in result.checkpoints]
    assert kinds.count("index") >= 2 and kinds[-1] == "state"
    assert [t.kind for t in summarizer.tasks] == ["pass"]
    (task,) = summarizer.tasks
    assert [p.kind for p in task.parts] == ["stub"] * (len(kinds) - 1) + ["state"]
    assert task.max_tokens == sum(p.max_tokens for p in task.parts)
    summaries = _summaries(session, result)
    assert all(s.degraded is None for s in summaries)
    # the call's raw answer is logged once (a replay serves it once), on the first region
    assert [s.raw_output is not None for s in summaries] == [True] + [False] * (len(kinds) - 1)
    assert_layout(session)


def test_one_call_texts_equal_what_separate_calls_would_write():
    """The split answer lands byte for byte what one call per region would have landed."""
    together, apart = long_session(), long_session()
    one = run(engine_for(together, Sections()).compact_now(window=100_000))
    separate = Sections(fail_kinds=("pass",))  # the one call fails: one call per region
    many = run(engine_for(apart, separate).compact_now(window=100_000))
    assert len(separate.tasks) == len(many.checkpoints) + 1 > 2
    assert [s.summary for s in _summaries(together, one)] == [
        s.summary for s in _summaries(apart, many)
    ]


def test_every_pass_of_the_loop_is_one_call_extending_the_last_conversation_request(
    harness: Harness,
):
    summarizer = RouteSummarizer(("scripted", "scripted"))
    _loop(harness, summarizer)
    passes = engine_passes(harness)
    assert len(passes) >= 2
    assert len(summarizer.requests) == len(passes)  # one summariser call per pass
    assert any(t.kind == "pass" for t in summarizer.tasks)
    conversation = [_wire(r) for r in harness.provider.requests]
    sent = harness.provider.requests
    for request in summarizer.requests:
        tools, messages = _wire(request)
        prefixes = [m for t, m in conversation if t == tools and messages.startswith(m[:-1])]
        assert prefixes, "a pass call that does not extend a conversation request"
        assert request.messages[-1].text().startswith("[Compaction task")
        # it carries the last request as sent (and at most its text reply): nothing unsent
        carried = request.messages[:-1]
        last = next(r for r in reversed(sent) if r.messages == carried[: len(r.messages)])
        assert len(carried) - len(last.messages) <= 1
        assert all(m.role == "assistant" for m in carried[len(last.messages) :])


def test_a_riding_call_carries_the_last_request_as_sent_when_the_pass_reads_only_that():
    prompt, reply = user_message("go", id="u1"), assistant_message("done", id="a1")
    calling = assistant_message("", id="a2", tool_calls=[tool_call_block("c1")])
    result, follow = tool_result_message("c1", "out", id="t1"), user_message("next", id="u2")
    # a text reply was seen by the provider: it rides along; the unsent prompt does not
    assert sent_prefix((prompt, reply, follow), 2) == (prompt, reply)
    # a reply that opened a tool call would leave it unanswered: cut before it
    assert sent_prefix((prompt, reply, follow, calling, result), 3) == (prompt, reply, follow)
    # the pass reads beyond what was sent, or nothing was sent yet: the whole conversation
    assert sent_prefix((prompt, reply, follow), 3) == (prompt, reply, follow)
    assert sent_prefix((prompt, follow), 1) == (prompt, follow)


def test_the_pass_call_asks_for_every_part_and_names_each_marker():
    session = long_session()
    summarizer = Sections()
    run(engine_for(session, summarizer).compact_now(window=100_000))
    (task,) = summarizer.tasks
    request = build_summary_request(task, provider="p", model="m")
    instruction = request.messages[-1].text()
    for label in pass_labels(task):
        assert pass_marker(label) in instruction
    assert request.messages[:-1] == task.conversation
    assert request.params["max_tokens"] == output_budget(task) >= task.max_tokens


# ---- a bad part degrades only itself -------------------------------------------------------


def test_a_junk_stub_section_degrades_only_that_stub():
    session = long_session()
    footer = "[checkpoint c3: shadows conversation span #1–#2; originals retrievable via …]"
    junk = {"stub 2": footer}
    summarizer = Sections(lambda label, text: junk.get(label, text))
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    degraded = [s.degraded for s in _summaries(session, result)]
    assert degraded[1] == "fallback"
    assert degraded[0] is None and all(d is None for d in degraded[2:])
    assert len(summarizer.tasks) == 1  # no call of its own for a junk stub
    assert_layout(session)


def test_a_missing_stub_section_degrades_that_stub_to_a_pointer():
    session = long_session()
    summarizer = Sections(lambda label, text: None if label == "stub 1" else text)
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    first = _summaries(session, result)[0]
    assert first.degraded == "fallback" and first.summary.startswith("Earlier conversation:")
    assert "ZEBRA-7700" in first.summary  # the code anchors stay


def test_a_stub_section_keeps_only_literals_of_its_own_slice():
    session = long_session()

    def invent(label, text):
        if label != "stub 1":
            return text
        return text + "\nKeywords — id: ZEBRA-7707, NOPE-1234"  # a later slice's id, a fake one

    result = run(engine_for(session, Sections(invent)).compact_now(window=100_000))
    first = _summaries(session, result)[0]
    assert "ZEBRA-7700" in first.summary
    assert "ZEBRA-7707" not in first.summary and "NOPE-1234" not in first.summary


def test_a_bad_state_section_is_asked_for_in_a_call_of_its_own():
    session = long_session()
    summarizer = Sections(lambda label, text: "no sections here" if label == "state" else text)
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    assert [t.kind for t in summarizer.tasks] == ["pass", "state"]
    summaries = _summaries(session, result)
    assert summaries[-1].kind == "state" and "## Goal" in summaries[-1].summary
    assert summaries[0].raw_output is not None  # the pass's one answer, logged once


def test_a_missing_state_section_whose_own_call_fails_commits_nothing():
    session = long_session()
    nodes = list(session.nodes)
    summarizer = Sections(
        lambda label, text: None if label == "state" else text, fail_kinds={"state"}
    )
    try:
        run(engine_for(session, summarizer).compact_now(window=100_000))
    except CompactionError as exc:
        assert "state call failed" in str(exc)
    else:
        raise AssertionError("the pass must fail")
    assert session.nodes == nodes


# ---- falling back to one call per region ---------------------------------------------------


def test_a_failed_pass_call_is_written_call_by_call():
    session = long_session()
    summarizer = Sections(fail_kinds={"pass"})
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    kinds = [t.kind for t in summarizer.tasks]
    assert kinds[0] == "pass" and kinds[-1] == "state"
    assert kinds.count("stub") == len(result.checkpoints) - 1
    assert all(s.degraded is None for s in _summaries(session, result))


def test_an_answer_beyond_the_output_bound_takes_the_fewest_calls_that_fit_in_order():
    session = long_session()
    bound = SETTINGS.state_max_tokens + SETTINGS.stub_tokens
    summarizer = Sections(max_output_tokens=bound)
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    tasks = summarizer.tasks
    # the stubs in one call, as many as fit; the state fits with none of them: a part left
    # alone is asked in a call of its own (as are the parts after it)
    assert [t.kind for t in tasks] == ["pass", "state"]
    assert tasks[0].max_tokens <= bound
    assert tasks[0].max_tokens + tasks[1].max_tokens > bound
    parts = [p for t in tasks for p in t.parts]
    assert len(parts) + 1 == len(result.checkpoints) > len(tasks)
    assert all(p.kind == "stub" for p in parts)  # consecutive parts, in order
    summaries = _summaries(session, result)
    assert all(s.degraded is None for s in summaries)
    assert sum(s.raw_output is not None for s in summaries) == 1  # the stubs' call's answer
    assert_layout(session)


def test_pass_task_says_no_when_the_answer_or_the_instruction_would_not_fit():
    session = long_session()
    backend = RecallableBackend(ExtractiveSummarizer(), SETTINGS)
    plan = backend.plan(session, retain_tokens=300, focus=None, reason="manual", window=100_000)
    assert plan is not None
    parts = [r.task for r in plan.regions if r.task is not None]
    task = pass_task(parts, window=None, max_output=None)
    assert task is not None and task.output_limit is None
    total = task.max_tokens
    assert total == sum(p.max_tokens for p in parts)
    # the summariser's output bound
    assert pass_task(parts, window=None, max_output=total).output_limit == total
    assert pass_task(parts, window=None, max_output=total - 1) is None
    # the room the call, its instruction naming every slice included, leaves in the window
    sent = request_tokens(dataclasses.replace(task, max_tokens=0))
    assert sent > sum(session.node_tokens(s) for s in session.nodes)
    assert pass_task(parts, window=sent + total, max_output=None).output_limit == total
    assert pass_task(parts, window=sent + total - 1, max_output=None) is None
    # one call when it fits; a single model region, or parts of both layouts: none
    whole = pass_batches(plan.regions, window=sent + total, max_output=None)
    assert [len(indexes) for indexes, _ in whole] == [len(parts)]
    assert pass_batches(plan.regions[-1:], window=None, max_output=None) == []
    model = [r for r in plan.regions if r.task is not None]
    mixed = [
        msgspec.structs.replace(r, task=dataclasses.replace(r.task, layout="compact"))
        if i == 0
        else r
        for i, r in enumerate(model)
    ]
    assert pass_batches(mixed, window=None, max_output=None) == []


def test_the_instruction_of_a_call_without_the_state_has_only_the_stub_rules():
    session = long_session()
    backend = RecallableBackend(ExtractiveSummarizer(), SETTINGS)
    plan = backend.plan(session, retain_tokens=300, focus="the port", reason="manual")
    parts = [r.task for r in plan.regions if r.task is not None]
    stubs_only = build_summary_request(
        pass_task(parts[:2], window=None, max_output=None), provider="p", model="m"
    )
    text = stubs_only.messages[-1].text()
    assert "Stub sections:" in text and "State section:" not in text
    state_only = build_summary_request(
        pass_task(parts[-1:], window=None, max_output=None), provider="p", model="m"
    )
    text = state_only.messages[-1].text()
    assert "State section:" in text and "Stub sections:" not in text
    assert text.endswith("keep this in focus: the port")


# ---- the compact layout (a different summariser model) -------------------------------------


class OtherRouteSections(Sections):
    """``Sections`` on a route other than the conversation's: the compact layout."""

    route = ("other", "small-model")


def test_a_compact_pass_beyond_the_output_bound_takes_the_fewest_calls_that_fit_in_order():
    """Each compact call sends its own parts' messages once — a call of stubs alone their
    slices in order, the call with the state the whole span — and each marker line names its
    slice where that call sends it."""
    session = long_session()
    bound = SETTINGS.state_max_tokens + 2 * SETTINGS.stub_tokens
    summarizer = OtherRouteSections(max_output_tokens=bound)
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    tasks = [t for t in summarizer.tasks if t.kind == "pass"]
    assert tasks and all(t.layout == "compact" for t in tasks)
    assert [t.kind for t in summarizer.tasks[len(tasks) :]] == ["state"]  # alone: its own call
    parts = [p for t in tasks for p in t.parts]
    assert len(parts) + 1 == len(result.checkpoints)
    for task in tasks:
        request = build_summary_request(task, provider="other", model="small-model")
        if task.parts[-1].kind == "state":
            assert task.messages == task.parts[-1].messages
        else:
            assert task.messages == tuple(m for p in task.parts for m in p.messages)
        for part in task.parts:
            assert part.slice_range is not None
            first, last = part.slice_range
            assert request.messages[first - 1 : last] == tuple(map(as_transcript, part.messages))
    summaries = _summaries(session, result)
    assert all(s.degraded is None for s in summaries)
    assert_layout(session)


def test_compact_parts_share_a_call_only_with_one_context_and_their_slices_in_its_span():
    session = long_session()
    backend = RecallableBackend(RouteSummarizer(("other", "small-model")), SETTINGS)
    plan = backend.plan(session, retain_tokens=300, focus=None, reason="manual")
    parts = [r.task for r in plan.regions if r.task is not None]
    assert all(p.layout == "compact" for p in parts) and len(parts) >= 3
    whole = compact_pass_task(parts)
    assert whole is not None and whole.messages == parts[-1].messages
    stubs, state = parts[:-1], parts[-1]
    other_context = [dataclasses.replace(stubs[0], keyword_lines=("Keywords — x",)), *parts[1:]]
    assert compact_pass_task(other_context) is None
    other_base = [*stubs, dataclasses.replace(state, previous="## Goal\n- another state")]
    assert compact_pass_task(other_base) is None
    elsewhere = (user_message("a message outside the span"),)
    outside = [dataclasses.replace(stubs[0], messages=elsewhere), *parts[1:]]
    assert compact_pass_task(outside) is None
    assert pass_task(outside, window=None, max_output=None) is None
    empty = [dataclasses.replace(stubs[0], messages=()), *parts[1:]]
    assert compact_pass_task(empty) is None
    # a call of stubs alone sends their slices, consecutive, from message #1 (no context yet)
    alone = compact_pass_task(stubs[:2])
    assert alone is not None and [p.slice_range for p in alone.parts] == [
        (1, len(stubs[0].messages)),
        (len(stubs[0].messages) + 1, len(stubs[0].messages) + len(stubs[1].messages)),
    ]


# ---- the splitter --------------------------------------------------------------------------

_LABELS = st.integers(min_value=1, max_value=6).map(
    lambda n: (*(f"stub {i}" for i in range(1, n)), "state")
)
_BODY = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    ),
    max_size=80,
).filter(lambda t: "=" not in t)


@settings(max_examples=200, deadline=None)
@given(labels=_LABELS, data=st.data())
def test_splitting_a_joined_answer_gives_back_every_section(labels, data):
    bodies = [data.draw(_BODY) for _ in labels]
    answer = data.draw(_BODY) + "\n" + join_pass_answer(zip(labels, bodies, strict=True))
    assert split_pass_answer(answer, labels) == {
        label: body.strip() for label, body in zip(labels, bodies, strict=True)
    }


@settings(max_examples=200, deadline=None)
@given(
    labels=_LABELS,
    chunks=st.lists(
        st.one_of(
            _BODY,
            st.sampled_from(["stub 1", "stub 2", "stub 9", "state", "STATE", "Stub  3"]).map(
                lambda label: f"{'=' * 3} {label} {'=' * 2}"
            ),
        ),
        max_size=12,
    ),
)
def test_splitting_any_answer_yields_only_wanted_labels_first_occurrence_wins(labels, chunks):
    answer = "\n".join(chunks)
    sections = split_pass_answer(answer, labels)
    assert set(sections) <= set(labels)
    for label, body in sections.items():
        assert pass_marker(label) not in body
        # the section is the text after the FIRST marker of its label, up to the next marker
        lines = answer.splitlines()
        at = next(i for i, line in enumerate(lines) if _label_of(line) == label)
        following = []
        for line in lines[at + 1 :]:
            if _label_of(line) is not None:
                break
            following.append(line)
        assert body == "\n".join(following).strip()


def _label_of(line: str) -> str | None:
    sections = split_pass_answer(line + "\nx", ("stub 1", "stub 2", "stub 3", "stub 9", "state"))
    return next(iter(sections), None)


def test_text_before_the_first_marker_and_unknown_labels_are_dropped():
    answer = "Sure!\n=== stub 7 ===\nnot asked\n=== Stub 1 ===\none\n=== state ===\n## Goal\n- g"
    assert split_pass_answer(answer, ("stub 1", "state")) == {
        "stub 1": "one",
        "state": "## Goal\n- g",
    }


# ---- replay --------------------------------------------------------------------------------

PASS_ANSWER = join_pass_answer(
    [("stub 1", "Read the module and noted its port."), ("state", "## Goal\n- keep going")]
)
REPLAY = CompactionSettings(
    backend="recallable", retain_tokens=200, chunk_tokens=1000, stub_tokens=60, state_max_tokens=200
)
TURNS = 20


def _drive(provider, workspace: Path, *, max_output_tokens: int | None = None) -> Session:
    session = Session(MemoryStore().create(cwd=str(workspace)), clock=fixed_clock)
    ids = itertools.count(1)
    summarizer = ModelSummarizer(
        provider, "m", history=session.events, max_output_tokens=max_output_tokens
    )
    engine = CompactionEngine(
        session, RecallableBackend(summarizer, REPLAY), REPLAY, new_id=lambda: f"p{next(ids)}"
    )
    pre_step, overflow = compaction_hooks(engine)
    agent = Agent(
        session,
        provider,
        ToolRegistry(default_tools()),
        ApprovalPolicy("auto"),
        config=AgentConfig(provider="scripted", model="m", system="sys", context_window=6000),
        workspace=workspace,
        pre_step_hooks=[pre_step],
        overflow_handler=overflow,
    )
    for i in range(TURNS):
        run(agent.run_turn(f"question {i} about ZEBRA-{7700 + i} " + "detail " * 120))
    return session


def test_a_recorded_one_call_pass_replays_to_identical_bytes(tmp_path: Path):
    entries = [{"text": f"answer {i} " + "words " * 100} for i in range(TURNS)]
    scripted = ScriptedProvider(entries, summaries=[{"text": PASS_ANSWER}] * TURNS)
    recorded = _drive(scripted, tmp_path)
    summaries = [e for e in recorded.events if isinstance(e, CompactionSummaryEvent)]
    streamed = [s for s in summaries if s.data.llm_stream_call]
    assert streamed and len(streamed) < len(summaries)  # one logged answer per pass call
    assert any(s.data.raw_output == PASS_ANSWER for s in streamed)
    replay = ReplayProvider(list(recorded.events), name="scripted", model="m")
    replayed = _drive(replay, tmp_path)
    assert [encode_event(e) for e in replayed.events] == [encode_event(e) for e in recorded.events]
