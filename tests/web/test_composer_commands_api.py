"""The terminal UI's ``/cost``, ``/title`` and ``/model`` in ``dsh web``'s API, with the terminal
UI's meaning and words: ``GET …/cost`` the billed tokens per model (the TUI's ``/cost`` text as
``note``), ``GET``/``POST …/title`` the title said or logged as ``session/title``, ``GET``/``POST
…/model`` the model the session's next turns run on, switched for them and logged by the next
turn as a route change (``session/settings``, ``request/context``), as after the terminal UI's
``/model``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from starlette.testclient import TestClient

from dsh.agent.billing import cost_report, render_cost
from dsh.agent.model_command import model_note, switched_note
from dsh.agent.title_command import NO_SESSION
from dsh.config import DEFAULT_CONTEXT_WINDOW, ProviderSettings
from dsh.events import AssistantMessageEvent, RequestContextEvent, SessionSettingsEvent
from dsh.surface import Session
from dsh.web import WebRuntime
from tests.web.conftest import (
    WebEnv,
    error_of,
    make_env,
    new_session,
    open_client,
    wait_idle,
    wait_until,
)


def prompt(client: TestClient, sid: str, text: str) -> dict[str, Any]:
    sent = client.post(f"/api/sessions/{sid}/prompt", json={"text": text})
    assert sent.status_code == 202, sent.text
    return wait_idle(client, sid)


def types(env: WebEnv, sid: str) -> list[str]:
    return [json.loads(line)["type"] for line in env.log_lines(sid)]


# ---- /cost ------------------------------------------------------------------------------------


def test_cost_is_the_terminal_uis_bills_of_the_log_open_here_or_stored(
    client: TestClient, env: WebEnv
) -> None:
    sid = new_session(client)
    before = client.get(f"/api/sessions/{sid}/cost").json()
    assert before == {
        "bills": [],
        "usd": None,
        "note": "No billed tokens yet: no model call has reported usage.",
    }
    prompt(client, sid, "read notes")
    with Session.open(env.store, sid) as stored:  # the TUI's /cost of the same log
        expected = cost_report(stored.events)
    answer = client.get(f"/api/sessions/{sid}/cost").json()
    assert answer["note"] == render_cost(expected)
    assert answer["note"].startswith("Billed tokens (the providers' usage figures):")
    [bill] = expected.bills
    assert answer["bills"] == [
        {
            "provider": "scripted",
            "model": "scripted",
            "role": "conversation",
            "calls": 2,
            "uncachedTokens": bill.uncached,
            "cacheReadTokens": bill.cache_read,
            "cacheWriteTokens": bill.cache_write,
            "outputTokens": bill.output,
            "usd": bill.cost,
        }
    ]
    assert answer["usd"] == expected.cost and expected.cost is not None
    assert client.post(f"/api/sessions/{sid}/close").status_code == 200
    assert client.get(f"/api/sessions/{sid}/cost").json() == answer  # read from the store
    assert error_of(client.get("/api/sessions/nosuch/cost"))[0] == 404


# ---- /title -----------------------------------------------------------------------------------


def test_title_is_said_and_a_new_one_is_logged_and_listed(client: TestClient, env: WebEnv) -> None:
    sid = new_session(client)
    # a new session has nothing stored to name: the TUI's words before its first prompt
    assert client.get(f"/api/sessions/{sid}/title").json() == {"title": None, "note": NO_SESSION}
    renamed = client.post(f"/api/sessions/{sid}/title", json={"title": "too early"})
    assert renamed.json() == {"title": None, "note": NO_SESSION, "logged": False}
    prompt(client, sid, "read notes")
    assert client.get(f"/api/sessions/{sid}/title").json() == {
        "title": "read notes",
        "note": "Title: read notes  (/title TEXT renames the session)",
    }
    renamed = client.post(f"/api/sessions/{sid}/title", json={"title": "  Fix the parser "})
    assert renamed.json() == {
        "title": "Fix the parser",
        "note": "Session titled: Fix the parser",
        "logged": True,
    }
    last = json.loads(env.log_lines(sid)[-1])
    assert last["type"] == "session/title" and last["data"] == {"title": "Fix the parser"}
    assert client.get(f"/api/sessions/{sid}").json()["title"] == "Fix the parser"
    listed = {row["id"]: row["title"] for row in client.get("/api/sessions").json()["sessions"]}
    assert listed[sid] == "Fix the parser"
    long = "x" * 100  # cut as the terminal UI cuts it (dsh.transcript.titles.trim_title)
    assert client.post(f"/api/sessions/{sid}/title", json={"title": long}).json()["title"] == (
        "x" * 59 + "…"
    )
    assert client.post(f"/api/sessions/{sid}/close").status_code == 200
    said = client.get(f"/api/sessions/{sid}/title").json()  # a stored session's, not opened
    assert said["note"] == f"Title: {'x' * 59}…  (/title TEXT renames the session)"
    refused = client.post(f"/api/sessions/{sid}/title", json={"title": "closed"})
    assert error_of(refused) == (409, "SESSION_NOT_OPEN")


def test_a_title_is_refused_while_a_turn_runs_and_when_empty(env: WebEnv) -> None:
    env.script = [{"text": "never", "delayMs": 3_600_000}]  # only a cancel ends it
    with open_client(env) as client:
        sid = new_session(client)
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "slow"})
        busy = client.post(f"/api/sessions/{sid}/title", json={"title": "mid-turn"})
        assert error_of(busy) == (409, "SESSION_BUSY")  # it would fall inside the turn
        assert client.post(f"/api/sessions/{sid}/cancel").status_code == 200
        wait_idle(client, sid)
        empty = client.post(f"/api/sessions/{sid}/title", json={"title": "  "})
        assert error_of(empty) == (400, "INVALID_ARGUMENT")
    assert "session/title" not in types(env, sid)


# ---- /model -----------------------------------------------------------------------------------


def scripted_runtime(env: WebEnv, window: int | None = None) -> WebRuntime:
    """``dsh web --script FILE`` (with ``--context-window``, if given): every route it resolves,
    a model ``/model`` names included, is the scripted provider's, fed by the file."""
    script = env.root / "script.json"
    script.write_text(json.dumps(env.script))
    settings, flags = env.settings, None
    if window is not None:
        provider = ProviderSettings(context_window=window)
        settings = msgspec.structs.replace(settings, provider=provider)
        flags = {"provider": {"context_window": window}}
    return WebRuntime(settings, script=script, overrides=flags)


def test_model_switches_the_next_turns_and_their_log_records_it(env: WebEnv) -> None:
    env.script = [{"text": "first"}, {"text": "second"}, {"text": "third"}]
    with open_client(env, scripted_runtime(env)) as client:
        sid = new_session(client)
        prompt(client, sid, "one")
        shown = client.get(f"/api/sessions/{sid}/model").json()
        window = DEFAULT_CONTEXT_WINDOW
        assert shown == {
            "provider": "scripted",
            "model": "scripted",
            "window": window,
            "note": model_note("scripted", "scripted", window),
            "models": None,  # the scripted model has no server to list models
            "unavailable": None,
        }
        logged = len(env.log_lines(sid))
        chosen = client.post(f"/api/sessions/{sid}/model", json={"name": "bigger-model"})
        assert chosen.json() == {
            "provider": "scripted",
            "model": "bigger-model",
            "window": window,
            "note": "Model for the next turns: bigger-model. Context window: 128,000 tokens.",
        }
        assert chosen.json()["note"] == switched_note("bigger-model", window)
        assert len(env.log_lines(sid)) == logged  # nothing is logged until a turn runs on it
        assert client.get(f"/api/sessions/{sid}/model").json()["model"] == "bigger-model"
        assert client.get(f"/api/sessions/{sid}/context").json()["model"] == "bigger-model"
        prompt(client, sid, "two")
    with Session.open(env.store, sid) as session:
        settings = session.of_type(SessionSettingsEvent)
        assert [s.data.model for s in settings] == ["scripted", "bigger-model"]
        assert "provider.model" in settings[-1].data.changed
        contexts = session.of_type(RequestContextEvent)
        assert [c.data.model for c in contexts] == ["scripted", "bigger-model"]
        replies = session.of_type(AssistantMessageEvent)
        models = [r.data.message.source.model for r in replies]  # type: ignore[union-attr]
        assert models == ["scripted", "bigger-model"]
    # a server started again runs the session on the model it recorded, as the TUI's next run
    with open_client(env, scripted_runtime(env)) as client:
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        assert client.get(f"/api/sessions/{sid}/model").json()["model"] == "bigger-model"
        prompt(client, sid, "three")
    with Session.open(env.store, sid) as session:
        last = session.of_type(AssistantMessageEvent)[-1]
        assert last.data.message.source.model == "bigger-model"  # type: ignore[union-attr]
        assert len(session.of_type(SessionSettingsEvent)) == 2


def test_a_running_turn_keeps_its_model_and_the_next_one_takes_the_new(tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="ask")
    write = {"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}
    env.script = [{"toolCalls": [write]}, {"text": "wrote it"}, {"text": "next turn"}]
    with open_client(env, scripted_runtime(env)) as client:
        sid = new_session(client)
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "write x"})

        def asked() -> list[dict[str, Any]]:
            return client.get(f"/api/sessions/{sid}").json()["approvals"]  # type: ignore[no-any-return]

        [approval] = wait_until(asked, what="the write's approval")  # the turn waits on it
        chosen = client.post(f"/api/sessions/{sid}/model", json={"name": "bigger-model"})
        assert chosen.status_code == 200
        answer = {"answer": "once"}
        client.post(f"/api/sessions/{sid}/approvals/{approval['id']}", json=answer)
        wait_idle(client, sid)
        prompt(client, sid, "again")
    with Session.open(env.store, sid) as session:
        replies = session.of_type(AssistantMessageEvent)
        models = [r.data.message.source.model for r in replies]  # type: ignore[union-attr]
        assert models == ["scripted", "scripted", "bigger-model"]


def test_another_model_runs_in_the_flags_window_and_the_header_measures_against_it(
    env: WebEnv,
) -> None:
    """``dsh web --context-window 32000`` on a session recorded in 16,000: the flags' window,
    which the session runs in, stays when ``/model NAME`` moves it to another model, and the
    header's context use is measured against it at once."""
    env.script = [{"text": "first"}, {"text": "second"}]
    with open_client(env, scripted_runtime(env, window=16_000)) as client:
        sid = new_session(client)
        prompt(client, sid, "one")
    with open_client(env, scripted_runtime(env, window=32_000)) as client:
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        assert client.get(f"/api/sessions/{sid}/model").json()["window"] == 32_000  # the flag's
        chosen = client.post(f"/api/sessions/{sid}/model", json={"name": "other"}).json()
        assert chosen["window"] == 32_000
        assert chosen["note"] == (
            "Model for the next turns: other. Its context window stays 32,000 tokens (set for "
            "this session)."
        )
        assert client.get(f"/api/sessions/{sid}").json()["stats"]["contextWindow"] == 32_000
        assert client.get(f"/api/sessions/{sid}/context").json()["window"] == 32_000
        prompt(client, sid, "two")
    with Session.open(env.store, sid) as session:
        latest = session.of_type(SessionSettingsEvent)[-1].data
        assert (latest.model, latest.context_window) == ("other", 32_000)


def test_a_model_that_cannot_be_resolved_is_refused_in_one_line(
    env: WebEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dsh web`` started without a key (sessions can be browsed): ``/model NAME`` on the
    configured provider is refused with the missing key's line, as the terminal UI's is."""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with open_client(env, WebRuntime(env.settings)) as client:
        sid = new_session(client)
        refused = client.post(f"/api/sessions/{sid}/model", json={"name": "deepseek-reasoner"})
        assert error_of(refused) == (503, "PROVIDER_NOT_CONFIGURED")
        assert "DEEPSEEK_API_KEY" in refused.json()["error"]["message"]


def test_a_model_name_must_print_on_one_line_on_a_session_open_here(env: WebEnv) -> None:
    """The names the terminal UI's ``/model`` takes (``model_name``): spaces inside a name are
    part of it; a line break, a tab, an escape or a bidi control is refused in one line."""
    env.script = [{"text": "first"}]
    with open_client(env, scripted_runtime(env)) as client:
        sid = new_session(client)
        for name in ("", "  ", "bad\x1bname", "two\nlines", "a\tb", "rtl\u202e"):
            answer = client.post(f"/api/sessions/{sid}/model", json={"name": name})
            assert error_of(answer) == (400, "INVALID_ARGUMENT"), name
        refused = client.post(f"/api/sessions/{sid}/model", json={"name": " bad\x1bname "})
        assert refused.json()["error"]["message"] == (
            "/model takes a model name on one line, not 'bad\\x1bname'"
        )
        spaced = client.post(f"/api/sessions/{sid}/model", json={"name": "  Qwen 7B Instruct "})
        assert spaced.json()["model"] == "Qwen 7B Instruct"
        assert spaced.json()["note"] == switched_note("Qwen 7B Instruct", DEFAULT_CONTEXT_WINDOW)
        prompt(client, sid, "one")
        assert client.post(f"/api/sessions/{sid}/close").status_code == 200
        for answer in (
            client.get(f"/api/sessions/{sid}/model"),
            client.post(f"/api/sessions/{sid}/model", json={"name": "other"}),
        ):
            assert error_of(answer) == (409, "SESSION_NOT_OPEN")
        assert error_of(client.get("/api/sessions/nosuch/model"))[0] == 404
