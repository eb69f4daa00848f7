"""The routes behind find, the sidebar and the context panel: ``/find``, the list's title, age
and holder, ``/context``; and a SQLite session followed from another writer."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from dsh.agent.context_report import context_report
from dsh.events import SessionTitle
from dsh.store import JsonlStore, SqliteStore
from dsh.surface import Session
from dsh.transcript.titles import TITLE_CHARS, SummaryFold, session_title
from dsh.web.follow import Followers
from dsh.web.titles import SIDEBAR_TITLE_CHARS, SessionIndex
from tests.helpers import append_chat_turn
from tests.helpers import new_session as new_stored_session
from tests.web.builders import run_apart, summary_on_an_older_page
from tests.web.conftest import WebEnv, error_of, make_env, new_session, open_client, wait_idle


def test_find_answers_hits_in_log_order_and_refuses_a_bad_query(
    client: TestClient, env: WebEnv
) -> None:
    sid = summary_on_an_older_page(env.store, env.workspace, after=6)
    body = client.get(f"/api/sessions/{sid}/find", params={"q": "prompt"}).json()
    assert body["query"] == "prompt" and body["truncated"] is False
    seqs = [h["seq"] for h in body["hits"]]
    assert seqs == sorted(seqs) and body["hits"][0]["snippet"] == "first prompt"
    assert {h["kind"] for h in body["hits"]} == {"user"}
    limited = client.get(f"/api/sessions/{sid}/find", params={"q": "prompt", "limit": 1}).json()
    assert len(limited["hits"]) == 1 and limited["truncated"] is True
    for query in ({"q": ""}, {"q": "   "}, {"q": "x" * 201}, {}):
        assert error_of(client.get(f"/api/sessions/{sid}/find", params=query)) == (
            400,
            "INVALID_ARGUMENT",
        )
    assert error_of(client.get("/api/sessions/nope/find", params={"q": "a"}))[0] == 404


def test_find_labels_the_undo_note_as_context_from_undo_not_as_the_users(tmp_path: Path) -> None:
    """A turn edits a file, ``/undo`` takes it back (the real route): the note it gives the model
    as a user turn is found as ``context`` from ``undo``, as the page shows it (``Injected
    context · undo``); the prompt the person typed is still ``user``."""
    env = make_env(tmp_path)
    (env.workspace / "calc.py").write_text("return a - b\n")
    edit = {"path": "calc.py", "old": "a - b", "new": "a + b"}
    env.script = [{"toolCalls": [{"name": "edit_file", "arguments": edit}]}, {"text": "fixed"}]
    with open_client(env) as client:
        sid = new_session(client)
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "fix calc.py"})
        wait_idle(client, sid)
        assert client.post(f"/api/sessions/{sid}/undo", json={}).status_code == 200
        note = client.get(f"/api/sessions/{sid}/find", params={"q": "undid"}).json()["hits"]
        prompt = client.get(f"/api/sessions/{sid}/find", params={"q": "fix calc"}).json()["hits"]
    assert [(h["kind"], h["plugin"]) for h in note] == [("context", "undo")]
    assert note[0]["snippet"].startswith("[undo] The user undid the file changes")
    assert [(h["kind"], h["plugin"]) for h in prompt] == [("user", None)]


def test_the_list_carries_title_last_activity_and_who_holds_it(
    client: TestClient, env: WebEnv
) -> None:
    sid = new_session(client)
    client.post(f"/api/sessions/{sid}/prompt", json={"text": "Please   read\nnotes.txt"})
    wait_idle(client, sid)
    row = next(r for r in client.get("/api/sessions").json()["sessions"] if r["id"] == sid)
    assert row["title"] == "Please read notes.txt"
    assert row["heldBy"] is None and row["open"] is True
    mtime = env.store.log_path(sid).stat().st_mtime_ns // 1_000_000
    assert row["lastActive"] == mtime >= row["createdAt"]


def test_titles_are_read_from_what_was_appended_not_the_whole_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_env(tmp_path)
    writer = new_stored_session(env.store)
    for turn in range(20):
        append_chat_turn(writer, f"prompt {turn}", "ok")
    writer.sync()
    index = SessionIndex(env.store)
    folded: list[int] = []
    real = SummaryFold.add

    def counted(self, events):  # type: ignore[no-untyped-def]
        folded.append(len(events))
        real(self, events)

    monkeypatch.setattr(SummaryFold, "add", counted)
    rows = [{"id": writer.id, "open": False}]
    assert index.annotate(rows, env.store.list())[0]["title"] == "prompt 0"
    assert sum(folded) == len(writer.events)  # the first listing reads the log once
    folded.clear()
    index.annotate(rows, env.store.list())
    assert sum(folded) == 0  # unchanged log: nothing is read again
    writer.append(SessionTitle(title="a title long enough to be cut by the terminal " * 2))
    append_chat_turn(writer, "later", "ok")
    writer.sync()
    title = index.annotate(rows, env.store.list())[0]["title"]
    assert sum(folded) == 7  # the title and the appended turn, not the log
    assert title == session_title(writer.events, SIDEBAR_TITLE_CHARS)
    assert TITLE_CHARS < len(title) <= SIDEBAR_TITLE_CHARS
    writer.close()


def test_a_later_slash_title_of_a_sqlite_session_shows_in_the_next_listing(
    tmp_path: Path,
) -> None:
    """SQLite logs are read on from their position too, so a ``/title`` given after the list
    first showed the session is shown at once (it showed only after a server restart)."""
    store = SqliteStore(tmp_path / "sqlite-home")
    writer = new_stored_session(store)
    append_chat_turn(writer, "the first prompt", "ok")
    index = SessionIndex(store)
    rows = [{"id": writer.id, "open": False}]
    assert index.annotate(rows, store.list())[0]["title"] == "the first prompt"
    writer.append(SessionTitle(title="named later"))
    assert index.annotate(rows, store.list())[0]["title"] == "named later"
    assert rows[0]["lastActive"] is None  # no file time to report
    writer.close()


def test_the_web_list_benchmark_prints_each_figure_beside_the_old_way() -> None:
    """``benchmarks/web_list.py`` on small sessions (figures are not checked: no timing
    assertions; it exits with an error if the two ways' titles differ)."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "web_list.py"
    small = ["--events", "400", "--sessions", "3", "--turns", "2", "--repeat", "3"]
    done = subprocess.run(
        [sys.executable, str(script), *small],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("load average: ") and lines[-1].startswith("load average after: ")
    for figure in ("first listing", "after a restart", "repeat, settled", "after one turn"):
        row = next(line for line in lines if line.startswith(figure))
        assert row.count(" ms") == 2 and row.endswith("x")


def test_a_title_set_with_slash_title_shows_in_the_web_session_list(
    client: TestClient, env: WebEnv
) -> None:
    writer = new_stored_session(env.store)  # the TUI's /title logs a session/title event
    append_chat_turn(writer, "the first prompt", "ok")
    writer.append(SessionTitle(title="named in the terminal"))
    append_chat_turn(writer, "a later prompt", "ok")
    writer.append(SessionTitle(title="renamed in the terminal"))
    writer.sync()
    rows = client.get("/api/sessions").json()["sessions"]
    assert next(r for r in rows if r["id"] == writer.id)["title"] == "renamed in the terminal"
    assert client.get(f"/api/sessions/{writer.id}").json()["title"] == "renamed in the terminal"
    assert session_title(writer.events) == "renamed in the terminal"  # what the TUI shows
    writer.append(SessionTitle(title="and again"))
    writer.sync()
    rows = client.get("/api/sessions").json()["sessions"]
    assert next(r for r in rows if r["id"] == writer.id)["title"] == "and again"
    writer.close()


def test_context_is_the_face_neutral_report_of_the_session(client: TestClient, env: WebEnv) -> None:
    sid = new_session(client)
    client.post(f"/api/sessions/{sid}/prompt", json={"text": "Please read notes.txt"})
    wait_idle(client, sid)
    live = client.get(f"/api/sessions/{sid}/context").json()
    client.post(f"/api/sessions/{sid}/close")
    stored = client.get(f"/api/sessions/{sid}/context").json()
    with Session.open(env.store, sid) as session:
        expected = context_report(session, default_window=env.window).public()
    assert live == stored == {**expected, "routeNotice": None}  # the route found nothing to say
    assert live["provider"] == "scripted" and live["cost"]["usd"] > 0  # priced as DeepSeek
    assert live["cost"]["basis"].endswith("at deepseek-chat list prices")
    assert error_of(client.get("/api/sessions/nope/context"))[0] == 404


def test_a_sqlite_session_another_writer_appends_to_is_followed(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.store = SqliteStore(tmp_path / "sqlite-home")  # type: ignore[assignment]
    writer = new_stored_session(env.store)
    append_chat_turn(writer, "before", "ok")
    registry = env.registry()

    async def follow() -> list[str]:
        hub = registry.hub(writer.id)
        hub.bind_loop()
        subscriber = hub.subscribe()
        followers = Followers(registry)
        followers.ensure(writer.id, len(writer.events) - 1)
        append_chat_turn(writer, "written elsewhere", "seen here")
        frames: list[str] = []
        while sum('"kind":"event"' in f for f in frames) < 6:
            frames.append(await asyncio.wait_for(subscriber.queue.get(), 10))
        await followers.stop()
        return frames

    frames = run_apart(follow())
    events = [f for f in frames if '"kind":"event"' in f]
    assert len(events) == 6 and "written elsewhere" in events[2] and "seen here" in events[3]
    writer.close()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["prompt", "title"]), st.text(min_size=1, max_size=120)),
        max_size=6,
    )
)
def test_the_sidebar_title_read_from_the_file_is_the_one_of_the_whole_log(steps) -> None:  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory() as home:
        store = JsonlStore(Path(home))
        writer = new_stored_session(store)
        for kind, text in steps:
            if kind == "prompt":
                append_chat_turn(writer, text, "ok")
            else:
                writer.append(SessionTitle(title=text))
        writer.sync()
        rows = SessionIndex(store).annotate([{"id": writer.id, "open": False}], store.list())
        assert rows[0]["title"] == session_title(writer.events, SIDEBAR_TITLE_CHARS)
        writer.close()


def test_the_context_carries_what_resolving_the_route_found(tmp_path: Path) -> None:
    from dsh.agent.runtime import Route
    from dsh.web.runtime import WebRuntime

    env = make_env(tmp_path)
    env.script = [{"text": "hi"}]
    notice = "http://127.0.0.1:9/v1 does not report its context window; assuming 128,000 tokens"
    runtime = WebRuntime(env.settings, Route(env.provider(), "scripted", env.window, notice))
    with open_client(env, runtime) as client:
        sid = new_session(client)
        assert client.get(f"/api/sessions/{sid}/context").json()["routeNotice"] == notice
    with open_client(env) as quiet:
        sid = new_session(quiet)
        assert quiet.get(f"/api/sessions/{sid}/context").json()["routeNotice"] is None
