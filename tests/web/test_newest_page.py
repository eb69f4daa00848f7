"""The newest history page read from the end of a JSONL log is the page a full load gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.events import encode_event
from dsh.store import JsonlStore
from dsh.transcript.history import history_page
from dsh.web.newest import newest_page
from tests.helpers import append_chat_turn, append_tool_turn, new_session
from tests.web.builders import long_session, summary_on_an_older_page


def full_page(store: JsonlStore, session_id: str, size: int) -> tuple[list[bytes], bool, int]:
    log = store.open(session_id)
    try:
        page = history_page(log.events, None, size)
        return [encode_event(e) for e in page.events], page.has_more, len(log.events) - 1
    finally:
        log.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    turns=st.lists(st.booleans(), min_size=0, max_size=12),
    size=st.integers(min_value=1, max_value=30),
    first_read=st.sampled_from([64, 300, 2000, 1_000_000]),
)
def test_the_page_from_the_logs_end_is_the_full_loads_page(
    tmp_path_factory: pytest.TempPathFactory, turns: list[bool], size: int, first_read: int
) -> None:
    store = JsonlStore(tmp_path_factory.mktemp("newest"))
    writer = new_session(store)
    for with_tools in turns:
        if with_tools:
            append_tool_turn(writer, "use a tool", usage=None)
        else:
            append_chat_turn(writer, "just talk", "sure")
    writer.close()
    found = newest_page(store.log_path(writer.id), size, first_read=first_read)
    if not turns:
        assert found is None  # nothing but the header: the caller loads it
        return
    assert found is not None
    page, last = found
    assert ([encode_event(e) for e in page.events], page.has_more, last) == full_page(
        store, writer.id, size
    )


def test_compacted_sessions_and_their_checkpoints_page_the_same(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    for sid in (
        long_session(store, tmp_path, turns=40, compact_after=30),
        summary_on_an_older_page(store, tmp_path),
    ):
        for size in (1, 5, 50):
            found = newest_page(store.log_path(sid), size, first_read=512)
            assert found is not None
            page, last = found
            assert ([encode_event(e) for e in page.events], page.has_more, last) == full_page(
                store, sid, size
            )


def test_a_torn_last_line_is_left_out_as_a_load_leaves_it(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    writer = new_session(store)
    append_chat_turn(writer)
    writer.close()
    path = store.log_path(writer.id)
    expected = full_page(store, writer.id, 50)
    with path.open("ab") as handle:
        handle.write(b'{"type":"user/mess')
    found = newest_page(path, 50)
    assert found is not None
    assert ([encode_event(e) for e in found[0].events], found[0].has_more, found[1]) == expected
    assert newest_page(tmp_path / "missing.jsonl", 50) is None
