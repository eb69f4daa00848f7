"""``dsh run --session ID --base-url OTHER`` against real HTTP stand-ins on 127.0.0.1
(``FakeServer``): a window the user set stays the session's when a flag moves it to another
server; one its server gave is asked of the new one, and the warning names every recorded
value the move changes, not only the flag's own; ``--view settings`` says where the window came
from (``dsh.agent.session_settings``, ``dsh.agent.settings_record``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import run_session_id
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text

DSH = str(Path(sys.executable).with_name("dsh"))


def dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env |= {"DSH_HOME": str(tmp_path / "home"), "DSH_COMPACTION_SUMMARIZER": "extractive"}
    return subprocess.run(
        [DSH, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def first_run(tmp_path: Path, url: str, *flags: str) -> str:
    first = dsh(tmp_path, "run", "--base-url", url, "--model", "fake", *flags, "--yes", "hello one")
    assert first.returncode == 0, first.stderr
    return run_session_id(first.stderr)


def logged(stdout: str, kind: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines()]
    return [e["data"] for e in events if e["type"] == kind]


def settings_rows(tmp_path: Path, session_id: str) -> list[list[str]]:
    shown = dsh(tmp_path, "sessions", "show", session_id, "--view", "settings")
    assert shown.returncode == 0, shown.stderr
    return [line.split(None, 1) for line in shown.stdout.splitlines()]


def test_a_window_the_user_set_survives_a_move_to_another_server(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """The audit's repro: a session run with ``--context-window 8000`` reopened with only
    ``--base-url`` of a server that reports no window. It kept its 8,000 tokens (it used to
    run and compact in the 128,000 assumed for a new session, its budgets rescaled to them,
    the warning naming only the base URL and the view saying the server reported it)."""
    server.queue(openai_text("first answer"))
    session_id = first_run(tmp_path, server.url + "/v1", "--context-window", "8000")
    with FakeServer() as other:  # answers no window probe (404): a silent server
        other.queue(openai_text("second answer"))
        url = other.url + "/v1"
        flags = ("--session", session_id, "--base-url", url, "--yes", "--json")
        again = dsh(tmp_path, "run", *flags, "hello two")
        assert again.returncode == 0, again.stderr
        assert other.fixed_requests == []  # a window set: nothing asked
        assert other.bodies[-1]["max_tokens"] == 1600  # the reply bound of an 8,000 window
    assert again.stderr.splitlines() == [
        f"dsh: warning: session {session_id}: the flags change its recorded settings: "
        f"provider.base_url {server.url}/v1 -> {url}"
    ]
    (recorded,) = logged(again.stdout, "session/settings")
    assert (recorded["contextWindow"], recorded["windowAsked"]) == (8000, False)
    assert recorded["changed"] == ["provider.base_url"]
    budgets = recorded["compaction"]
    assert (budgets["chunkTokens"], budgets["stubTokens"], budgets["stateMaxTokens"]) == (
        1000,
        80,
        400,
    )
    rows = settings_rows(tmp_path, session_id)
    assert ["provider.context_window", "8000"] in rows
    assert ["window_asked", "no (set: kept on reopen)"] in rows


def props(n_ctx: int) -> Any:
    return json_ok({"default_generation_settings": {"n_ctx": n_ctx}})


def test_a_move_to_a_server_with_another_window_names_every_value_it_changes(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """A window the first server reported is asked of the one a flag moves the session to;
    the one warning line names the flag's change and the window and budgets that move with
    it, as the record logs them (it used to name the base URL alone)."""
    server.fixed["/props"] = props(8192)
    server.queue(openai_text("first answer"))
    session_id = first_run(tmp_path, server.url + "/v1")
    with FakeServer() as other:
        other.fixed["/props"] = props(16384)
        other.queue(openai_text("second answer"))
        url = other.url + "/v1"
        flags = ("--session", session_id, "--base-url", url, "--yes", "--json")
        again = dsh(tmp_path, "run", *flags, "hello two")
        assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines() == [
        f"dsh: warning: session {session_id}: the flags change its recorded settings: "
        f"provider.base_url {server.url}/v1 -> {url}; with them: provider.context_window "
        "8192 -> 16384; compaction.chunk_tokens 1024 -> 2048; compaction.stub_tokens 81 -> "
        "163; compaction.state_max_tokens 409 -> 819"
    ]
    (recorded,) = logged(again.stdout, "session/settings")
    assert recorded["changed"] == [
        "provider.base_url",
        "provider.context_window",
        "compaction.chunk_tokens",
        "compaction.stub_tokens",
        "compaction.state_max_tokens",
    ]
    assert ["window_asked", "yes (its server reported it: asked again on reopen)"] in (
        settings_rows(tmp_path, session_id)
    )


def test_the_settings_view_says_a_silent_servers_window_was_assumed_not_reported(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """A server that reports no window: the session runs in the 128,000 tokens assumed, and
    its settings say so (they used to say its server reported it)."""
    server.queue(openai_text("first answer"))
    session_id = first_run(tmp_path, server.url + "/v1")
    rows = settings_rows(tmp_path, session_id)
    assert ["provider.context_window", "128000"] in rows
    assert [
        "window_asked",
        "yes (its server reported none: the 128,000 tokens dsh assumes; asked again on reopen)",
    ] in rows
