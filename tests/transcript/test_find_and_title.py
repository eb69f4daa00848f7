"""Find in the transcript (what people see, compacted originals included, never a checkpoint's
payload) and the session title (the latest ``/title``, else the first prompt) at the web's width."""

from __future__ import annotations

from pathlib import Path

from dsh.events import Event, SessionTitle, UserMessageEvent
from dsh.store import JsonlStore
from dsh.transcript.find import find_in_transcript
from dsh.transcript.titles import session_title
from dsh.web.titles import SIDEBAR_TITLE_CHARS
from tests.helpers import append_chat_turn, append_tool_turn, new_session
from tests.web.builders import summary_on_an_older_page


def events_of(store: JsonlStore, session_id: str) -> list[Event]:
    log = store.open(session_id)
    try:
        return list(log.events)
    finally:
        log.close()


def test_find_reaches_shadowed_originals_and_summaries_but_never_a_checkpoint(
    tmp_path: Path,
) -> None:
    store = JsonlStore(tmp_path)
    sid = summary_on_an_older_page(store, tmp_path, after=4)
    events = events_of(store, sid)
    original = find_in_transcript(events, "FIRST PROMPT")  # shadowed by the checkpoint
    assert [(h.kind, h.snippet) for h in original] == [("user", "first prompt")]
    shadowed = events[original[0].seq]
    assert isinstance(shadowed, UserMessageEvent) and shadowed.surface_op == "append"
    assert [h.kind for h in find_in_transcript(events, "state summary text")] == ["marker"]
    assert find_in_transcript(events, "checkpoint payload") == []
    assert find_in_transcript(events, "   ") == []


def test_find_reaches_every_summary_of_a_pass_not_only_its_first() -> None:
    """A pass's marker stands where its first checkpoint landed, and its later stubs and its
    state are logged after it: find matched only the first region's summary, so a word of the
    pass's state (or of any later stub) was never found."""
    from dsh.store import MemoryStore
    from tests.recall.builders import bracket

    session = new_session(MemoryStore())
    first = append_chat_turn(session, "open the config", "port 8080")
    second = append_chat_turn(session, "run the migration", "it failed")
    stub = bracket(
        session, first.surface, "Read config", kind="index", compaction_id="k1", pass_id="p"
    )
    bracket(session, second.surface, "## Goal\nZEPHYR rollout", compaction_id="k2", pass_id="p")
    append_chat_turn(session, "and now?", "rerun it")
    hits = find_in_transcript(session.events, "zephyr")
    assert [(h.seq, h.kind, h.snippet) for h in hits] == [
        (stub.node, "marker", "## Goal ZEPHYR rollout")
    ]
    both = find_in_transcript(session.events, "o")
    assert [h.seq for h in both] == sorted(h.seq for h in both)  # still in log order


def test_find_covers_tool_cards_in_log_order_with_a_snippet(tmp_path: Path) -> None:
    session = new_session(JsonlStore(tmp_path))
    append_tool_turn(session, "read it", (("read_file", '{"path":"zebra.txt"}', "a zebra line"),))
    append_chat_turn(session, "what about the " + "long " * 40 + "zebra?", "no zebra here")
    hits = find_in_transcript(session.events, "Zebra")
    assert [h.kind for h in hits] == ["tool-call", "tool-result", "user", "assistant"]
    assert [h.seq for h in hits] == sorted(h.seq for h in hits)
    call, result = hits[0], hits[1]
    assert call.call_id == result.call_id is not None
    long_hit = hits[2].snippet
    assert long_hit.startswith("…") and "zebra?" in long_hit and len(long_hit) <= 82
    assert len(find_in_transcript(session.events, "zebra", limit=2)) == 2


def test_the_title_is_the_first_prompt_on_one_line_until_a_title_is_set(tmp_path: Path) -> None:
    session = new_session(JsonlStore(tmp_path))
    assert session_title(session.events) is None
    append_chat_turn(session, "  fix the\n\nparser   please ", "ok")
    append_chat_turn(session, "second prompt", "ok")
    assert session_title(session.events) == "fix the parser please"
    session.append(SessionTitle(title="parser fixes"))
    append_chat_turn(session, "third prompt", "ok")
    assert session_title(session.events) == "parser fixes"  # a /title anywhere in the log
    other = new_session(JsonlStore(tmp_path))
    append_chat_turn(other, "word " * 100, "ok")
    title = session_title(other.events, SIDEBAR_TITLE_CHARS)
    assert title is not None and len(title) == SIDEBAR_TITLE_CHARS and title.endswith("…")
