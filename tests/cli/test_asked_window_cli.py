"""``dsh run --session`` against a real HTTP stand-in on 127.0.0.1 (``FakeServer`` answering
``GET /props`` as llama.cpp does) restarted with another ``-c`` since the session last ran: a
window the server gave is asked again, as a new session asks it; one the user gave is kept
(``dsh.agent.asked_window``; docs/local-models.md, "The window is asked, not assumed")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_session_id
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, json_ok, openai_text

DSH = str(Path(sys.executable).with_name("dsh"))


def props(n_ctx: int) -> Canned:
    return json_ok({"default_generation_settings": {"n_ctx": n_ctx}})


def dsh(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env |= {"DSH_HOME": str(tmp_path / "home"), "DSH_COMPACTION_SUMMARIZER": "extractive"}
    command = [DSH, "run", "--base-url", url, "--model", "m", *args]
    return subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def first_session(tmp_path: Path, server: FakeServer, n_ctx: int, *flags: str) -> str:  # noqa: F811
    server.fixed["/props"] = props(n_ctx)
    server.queue(openai_text("first answer"))
    first = dsh(tmp_path, server.url + "/v1", *flags, "hello")
    assert first.returncode == 0, first.stderr
    return run_session_id(first.stderr)


def logged(stdout: str, kind: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines()]
    return [e["data"] for e in events if e["type"] == kind]


@pytest.mark.parametrize(
    ("before", "now", "budgets", "max_tokens"),
    [
        (8192, 4096, (512, 40, 204), 820),  # llama-server -c 4096: the smaller one
        (4096, 16384, (2048, 163, 819), 3277),  # a larger -c: the session gets its room
    ],
)
def test_a_resumed_session_runs_and_compacts_in_the_window_its_server_reports_now(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    before: int,
    now: int,
    budgets: tuple[int, int, int],
    max_tokens: int,
) -> None:
    """The window the first run asked the server for was recorded; the reopen asked again
    (once), ran in the new window with the budgets scaled to it, bounded the reply to what
    that window leaves, said so in one line and recorded what it ran with."""
    session_id = first_session(tmp_path, server, before)
    server.fixed["/props"] = props(now)  # the server restarted with another -c
    server.queue(openai_text("second answer"))
    asked = len(server.fixed_requests)
    again = dsh(tmp_path, server.url + "/v1", "--session", session_id, "--json", "again")
    assert again.returncode == 0, again.stderr
    assert [r.path for r in server.fixed_requests[asked:]] == ["/props"]
    assert again.stderr.splitlines() == [
        f"dsh: warning: session {session_id}: its server now reports a {now:,}-token context "
        f"window for m (the session recorded {before:,}); it runs and compacts in {now:,} "
        "(set --context-window or provider.context_window to choose another)"
    ]
    assert [c["contextWindow"] for c in logged(again.stdout, "request/context")] == [now]
    assert server.bodies[-1]["max_tokens"] == max_tokens  # what the window leaves a reply
    (recorded,) = logged(again.stdout, "session/settings")
    assert (recorded["contextWindow"], recorded["windowAsked"]) == (now, True)
    compaction = recorded["compaction"]
    assert (compaction["chunkTokens"], compaction["stubTokens"], compaction["stateMaxTokens"]) == (
        budgets
    )
    assert recorded["changed"] == [
        "provider.context_window",
        "compaction.chunk_tokens",
        "compaction.stub_tokens",
        "compaction.state_max_tokens",
    ]
    rows = [line.split(None, 1) for line in show(tmp_path, session_id, "settings").splitlines()]
    assert ["provider.context_window", str(now)] in rows
    assert ["window_asked", "yes (its server reported it: asked again on reopen)"] in rows


def test_a_resumed_session_whose_server_now_reports_too_small_a_window_is_refused_as_a_new_one(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """``llama-server -c 2048`` since: the reopen is refused in the line a new session gets,
    before any model call, and the session is left as it was (it used to send the turn in the
    recorded 8,192 and fail with the server's raw context-window error)."""
    session_id = first_session(tmp_path, server, 8192)
    (log,) = (tmp_path / "home").rglob("session.jsonl")
    before = log.read_bytes()
    server.fixed["/props"] = props(2048)
    calls = len(server.requests)
    again = dsh(tmp_path, server.url + "/v1", "--session", session_id, "again")
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.splitlines() == [
        f"dsh: error: {server.url}/v1 reports a 2,048-token context window for m "
        "(llama.cpp /props); dsh needs at least 4,096: give the model a larger one on the "
        "server (llama-server -c, Ollama's num_ctx, vLLM's --max-model-len)"
    ]
    assert len(server.requests) == calls and log.read_bytes() == before


def test_a_window_the_user_gave_stays_the_sessions_whatever_the_server_reports(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """``--context-window 6000`` on the first run: recorded as not asked, so the reopen without
    the flag keeps it and asks the server nothing (a user's window is authoritative)."""
    session_id = first_session(tmp_path, server, 8192, "--context-window", "6000")
    server.fixed["/props"] = props(4096)
    server.queue(openai_text("second answer"))
    again = dsh(tmp_path, server.url + "/v1", "--session", session_id, "--json", "again")
    assert again.returncode == 0, again.stderr
    assert server.fixed_requests == []  # neither run asked the server its window
    assert again.stderr == ""
    assert [body["max_tokens"] for body in server.bodies] == [1200, 1200]  # 6000 leaves 1200
    assert logged(again.stdout, "request/context") == []  # the route it last ran on
    assert logged(again.stdout, "session/settings") == []  # nothing changed: nothing logged
    (recorded,) = logged(show(tmp_path, session_id, "events"), "session/settings")
    assert (recorded["contextWindow"], recorded["windowAsked"]) == (6000, False)
    rows = [line.split(None, 1) for line in show(tmp_path, session_id, "settings").splitlines()]
    assert ["window_asked", "no (set: kept on reopen)"] in rows


def show(tmp_path: Path, session_id: str, view: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    command = [DSH, "sessions", "show", session_id, "--view", view]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout


def test_a_server_not_reached_on_reopen_leaves_the_session_in_the_window_it_reported(
    tmp_path: Path,
) -> None:
    """The server is down when the session is reopened: asked once (one connection attempt),
    the session keeps the 8,192 tokens it reported, not the 128,000 a new session would
    assume, and its recorded settings stay as they were."""
    with FakeServer() as gone:
        session_id = first_session(tmp_path, gone, 8192)
        url = gone.url + "/v1"
    again = dsh(tmp_path, url, "--session", session_id, "--json", "again")
    assert again.returncode == 1  # the turn cannot reach the server either
    assert again.stderr.splitlines()[0] == (
        f"dsh: warning: {url} could not be reached (connection refused) to ask its context "
        "window; keeping the 8,192 tokens the session recorded from it (set "
        "provider.context_window or --context-window to choose another)"
    )
    assert logged(again.stdout, "session/settings") == []  # the same window: nothing to log
