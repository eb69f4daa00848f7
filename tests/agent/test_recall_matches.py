"""A prompt is followed by the compacted messages that hold most of its rarer words, for models
that do not search on their own (dsh.agent.recall_matches; ``recall.attach_matches``)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent.recall_matches import (
    HEADING,
    MAX_MATCHES,
    MAX_NOTE_CHARS,
    matches_text,
)
from dsh.agent.wiring import attach_matches_on
from dsh.config import RecallSettings
from dsh.errors import PromptTooLarge
from dsh.events import (
    RECALL_PLUGIN,
    CompactionSummaryEvent,
    Message,
    PluginSource,
    TextBlock,
    UserMessageEvent,
)
from dsh.llm.scripted import ScriptedProvider
from dsh.recall import list_checkpoints, read_checkpoint
from dsh.recall.render import SpanCache
from dsh.recall.word_search import query_terms, search_words
from dsh.store import MemoryStore
from dsh.surface import Session, is_attachment
from tests.agent.conftest import run
from tests.compaction.test_recall_end_to_end import drive
from tests.helpers import append_chat_turn, new_session
from tests.recall.builders import bracket

TAG = re.compile(r"^\[(c\d+) #msg (\d+)\] ", re.M)
FACT = "the staging service listens on port 8443 behind the proxy"
FILLER = [
    "the tests pass now",
    "I ran the tests again and they pass",
    "the build is green",
    "the linter found nothing",
    "the tests pass on the branch",
]


def compacted(replies: list[str]) -> Session:
    """A session whose chat turns (prompt ``q<i>``, reply ``replies[i]``) one state checkpoint
    shadows, then one turn on the surface."""
    session = new_session(MemoryStore())
    turns = [append_chat_turn(session, f"q{i}", reply) for i, reply in enumerate(replies)]
    shadowed = [seq for turn in turns for seq in turn.surface]
    bracket(session, shadowed, "## Goal\nwork", compaction_id="k-1")
    append_chat_turn(session, "and now?", "next")
    return session


def note(session: Session, prompt: str, window: int = 128_000) -> str | None:
    return matches_text(session.events, prompt, cache=SpanCache(), index=session, window=window)


def test_a_question_in_other_words_brings_the_compacted_message_that_answers_it():
    session = compacted([*FILLER, FACT, *FILLER])
    text = note(session, "Which port does the staging service listen on?")
    assert text is not None and text.startswith(HEADING)
    ((checkpoint, index),) = TAG.findall(text)
    assert "8443" in text
    # the tag is one history_read opens
    assert FACT in read_checkpoint(session.events, checkpoint, int(index)).text


def test_a_prompt_of_common_words_brings_nothing():
    session = compacted([*FILLER, FACT, *FILLER])
    assert note(session, "do the tests pass?") is None  # 6 of 24 messages hold both words


def test_nothing_compacted_brings_nothing():
    session = new_session(MemoryStore())
    append_chat_turn(session, "q", FACT)
    assert note(session, "Which port does the staging service listen on?") is None


def test_a_match_a_note_since_the_latest_checkpoint_showed_is_not_shown_again():
    session = compacted([*FILLER, FACT, *FILLER])
    prompt = "Which port does the staging service listen on?"
    first = note(session, prompt)
    assert first is not None
    session.append(
        Message(
            id="attach-9-1",
            role="user",
            content=(TextBlock(text=first),),
            source=PluginSource(plugin=RECALL_PLUGIN),
        )
    )
    assert note(session, prompt) is None


def test_the_note_takes_at_most_an_eighth_of_a_small_window_and_the_cap():
    padding = "and some more words about what happened that day " * 4
    facts = [
        f"{padding} the staging service {n} listens on port 84{n:02d} behind proxy {n} {padding}"
        for n in range(4)
    ]
    session = compacted([*FILLER * 8, *facts])
    big = note(session, "staging service port proxy")
    assert big is not None and len(big) <= MAX_NOTE_CHARS
    assert len(TAG.findall(big)) == MAX_MATCHES
    small = note(session, "staging service port proxy", window=4096)
    assert small is not None and len(small) <= 4096 // 8
    assert 1 <= len(TAG.findall(small)) < MAX_MATCHES


VOCABULARY = ["port", "staging", "proxy", "tests", "build", "cache", "deploy", "nightly"]


@settings(max_examples=80, deadline=None)
@given(
    replies=st.lists(
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=6).map(" ".join),
        min_size=1,
        max_size=12,
    ),
    prompt_words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4, unique=True),
)
def test_every_match_shown_is_an_original_holding_the_prompts_rarest_word(
    replies: list[str], prompt_words: list[str]
):
    session = compacted(replies)
    prompt = " ".join(prompt_words)
    text = note(session, prompt)
    terms = query_terms(prompt)
    cache = SpanCache()
    (checkpoint,) = list_checkpoints(session.events)
    rarity = search_words(session.events, [checkpoint], terms, cache).rarity

    if text is None:
        # a reply holding every word, which no other message holds, is always shown
        alone = [
            reply
            for reply in replies
            if all([r for r in replies if term in query_terms(r)] == [reply] for term in terms)
        ]
        assert not alone, (prompt, replies)
        return
    tags = TAG.findall(text)
    assert 1 <= len(tags) <= MAX_MATCHES
    assert len(set(tags)) == len(tags)
    rarest = max(rarity, key=lambda term: rarity[term])
    for tag, index in tags:
        assert tag == checkpoint.id
        assert int(index) not in cache.copies(session.events, checkpoint)
        shown = cache.message(session.events, checkpoint, int(index))
        assert shown.startswith("Assistant: "), "the prompts q<i> hold none of its words"
        assert rarest in query_terms(shown), (prompt, shown)


QUESTION = "Which port does the staging service listen on?"


def _drive_to_a_checkpoint(tmp_path: Path, *, attach: bool):
    replies = [{"text": f"I looked: {FACT}."}]
    replies += [{"text": f"ok {i} " + "words " * 80} for i in range(20)]
    provider = ScriptedProvider(replies)
    session, _, agent = drive(provider, tmp_path, window=3000)
    agent.config = dataclasses.replace(agent.config, attach_matches=attach)
    run(agent.run_turn("look at the deployment notes"))
    for i in range(6):
        run(agent.run_turn(f"note {i}: " + "filler " * 150))
    assert session.of_type(CompactionSummaryEvent), "the small window must compact"
    return session, agent, provider


def _recall_notes(session: Session) -> list[UserMessageEvent]:
    return [
        e
        for e in session.of_type(UserMessageEvent)
        if isinstance(e.data.source, PluginSource) and e.data.source.plugin == RECALL_PLUGIN
    ]


def test_the_turn_logs_and_sends_the_note_after_its_prompt(tmp_path: Path):
    session, agent, provider = _drive_to_a_checkpoint(tmp_path, attach=True)
    before = len(_recall_notes(session))
    run(agent.run_turn(QUESTION))
    notes = _recall_notes(session)
    assert len(notes) == before + 1
    (latest,) = notes[before:]
    prompt = session.events[latest.seq - 1]
    assert isinstance(prompt, UserMessageEvent) and prompt.data.content[0].text == QUESTION
    text = latest.data.content[0].text
    assert text.startswith(HEADING) and "8443" in text
    last_request = provider.requests[-1]
    sent = [getattr(b, "text", None) for m in last_request.messages for b in m.content]
    assert sent.index(text) == sent.index(QUESTION) + 1, "sent right after the prompt"
    assert is_attachment(latest.data), "no compaction cut parts it from its prompt"


def test_off_the_prompt_goes_alone(tmp_path: Path):
    session, agent, _ = _drive_to_a_checkpoint(tmp_path, attach=False)
    run(agent.run_turn(QUESTION))
    assert _recall_notes(session) == []


def test_unset_it_is_on_for_openai_compatible_routes_only_and_a_setting_wins():
    unset = RecallSettings()
    assert attach_matches_on(unset, "openai-compatible")
    assert not attach_matches_on(unset, "deepseek")
    assert not attach_matches_on(unset, "anthropic")
    assert attach_matches_on(RecallSettings(attach_matches=True), "deepseek")
    assert not attach_matches_on(RecallSettings(attach_matches=False), "openai-compatible")


def test_a_note_compacted_since_is_not_a_match_its_original_is():
    session = new_session(MemoryStore())
    turns = [append_chat_turn(session, f"q{i}", reply) for i, reply in enumerate([*FILLER, FACT])]
    earlier = session.append(
        Message(
            id="attach-1-1",
            role="user",
            content=(TextBlock(text=f"{HEADING}\n[c1 #msg 1] {FACT}"),),
            source=PluginSource(plugin=RECALL_PLUGIN),
        )
    )
    shadowed = [seq for turn in turns for seq in turn.surface] + [earlier.seq]
    bracket(session, shadowed, "## Goal\nwork", compaction_id="k-1")
    append_chat_turn(session, "and now?", "next")
    text = note(session, QUESTION)
    assert text is not None
    ((checkpoint, index),) = TAG.findall(text)
    (target,) = list_checkpoints(session.events)
    assert checkpoint == target.id
    assert SpanCache().message(session.events, target, int(index)).endswith(FACT)


def test_a_prompt_the_note_would_make_too_large_goes_without_it(tmp_path: Path):
    session, agent, _ = _drive_to_a_checkpoint(tmp_path, attach=True)
    checked = agent.check_prompt

    def no_room_for_a_note(prompt, attached=()):
        if any(a.plugin == RECALL_PLUGIN for a in attached):
            raise PromptTooLarge("no room")
        checked(prompt, attached)

    agent.check_prompt = no_room_for_a_note  # type: ignore[method-assign]
    result = run(agent.run_turn(QUESTION))
    assert result.reason == "completed"
    assert _recall_notes(session) == []


def test_an_earlier_prompt_in_the_same_words_is_no_match_one_that_adds_a_fact_is():
    session = new_session(MemoryStore())
    turns = [
        append_chat_turn(session, "Run the tests for parser and tell me what fails.", "two fail"),
        *[append_chat_turn(session, f"q{i}", reply) for i, reply in enumerate(FILLER)],
        append_chat_turn(
            session,
            "Check whether anything still calls encode_token. The refactor is tracked as "
            "KESTREL-0419.",
            "nothing calls it any more",
        ),
    ]
    bracket(session, [s for turn in turns for s in turn.surface], "## Goal\nw", compaction_id="k")
    append_chat_turn(session, "and now?", "next")
    assert note(session, "Run the tests for validation and tell me what fails.") is None
    text = note(session, "Which ticket tracks the refactor?")
    assert text is not None and "KESTREL-0419" in text


def test_a_fact_the_person_gave_and_the_reply_repeating_it_are_found_in_a_short_history():
    # four compacted messages, two of them holding the words: not "common" for so few
    said = "The staging service listens on port 8443 behind the proxy; remember it."
    session = compacted_prompts([(said, f"echo: {said}"), ("go on", "done")])
    text = note(session, QUESTION)
    assert text is not None
    assert [line.split("] ", 1)[1] for line in text.splitlines()[1:]] == [
        f"User: {said}",
        f"Assistant: echo: {said}",
    ]


def compacted_prompts(turns: list[tuple[str, str]]) -> Session:
    """A session whose chat turns ``(prompt, reply)`` one state checkpoint shadows."""
    session = new_session(MemoryStore())
    seqs = [append_chat_turn(session, prompt, reply) for prompt, reply in turns]
    bracket(session, [s for turn in seqs for s in turn.surface], "## Goal\nw", compaction_id="k")
    append_chat_turn(session, "and now?", "next")
    return session
