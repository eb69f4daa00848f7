"""The web's session list is in the terminal UI's picker's order: last active first (the time
of the last event logged), so a session continued just now is at the top, not where its
creation time puts it."""

from __future__ import annotations

from starlette.testclient import TestClient

from dsh.store.base import now_millis
from dsh.surface import Session
from dsh.transcript.listing import session_summaries
from dsh.tui.picker import newest_first
from tests.helpers import append_chat_turn
from tests.web.conftest import WebEnv, open_client, wait_until


def test_a_session_continued_last_is_listed_first_as_in_the_picker(env: WebEnv) -> None:
    ids = []
    for prompt in ("oldest", "middle", "newest"):
        with Session.create(env.store, cwd=env.workspace) as session:
            append_chat_turn(session, prompt, "ok")
            ids.append(session.id)
    oldest, middle, newest = ids
    with Session.open(env.store, newest) as session:
        last_written = session.events[-1].time
    wait_until(lambda: now_millis() > last_written, what="the clock to pass the last write")
    with Session.open(env.store, oldest, writable=True) as session:
        append_chat_turn(session, "continued", "ok")
    client: TestClient
    with open_client(env) as client:
        listed = [row["id"] for row in client.get("/api/sessions").json()["sessions"]]
    assert listed == [oldest, newest, middle]
    picker = [summary.id for summary in newest_first(session_summaries(env.store))]
    assert listed == picker
