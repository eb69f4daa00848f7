"""Prompt commands in ``dsh web``: ``POST …/prompt {"text": "/NAME ARGS", "command": true}``
sends the command file's text (yours, or the session workspace's) as the turn's prompt; a
name that is no prompt command is 400 ``UNKNOWN_COMMAND`` naming the commands there are."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from dsh.config import dsh_home
from dsh.surface import Session
from dsh.web import SessionRegistry, session_info
from tests.helpers import append_chat_turn
from tests.web.conftest import WebEnv, error_of, new_session, wait_idle

INIT = {
    "name": "init",
    "description": "Inspect the project and write or refresh its AGENTS.md",
    "scope": "dsh",
}
"""dsh's own prompt command (``dsh.agent.init_command``), listed with the files'."""


def prompts(env: WebEnv, sid: str) -> list[str]:
    texts = []
    for line in env.log_lines(sid):
        event = json.loads(line)
        if event["type"] == "user/message" and event["data"]["source"]["kind"] == "user":
            texts.append("".join(block["text"] for block in event["data"]["content"]))
    return texts


def test_a_prompt_command_sends_its_text_and_an_unknown_one_is_refused(
    client: TestClient, env: WebEnv
) -> None:
    (dsh_home() / "commands").mkdir(parents=True)
    (dsh_home() / "commands" / "review.md").write_text("Review $ARGUMENTS for bugs.")
    (env.workspace / ".dsh" / "commands").mkdir(parents=True)
    (env.workspace / ".dsh" / "commands" / "ship.md").write_text("Ship it.")
    sid = new_session(client)
    listed = client.get(f"/api/sessions/{sid}/commands")
    assert listed.json() == {
        "commands": [
            INIT,
            {"name": "review", "description": "Review $ARGUMENTS for bugs.", "scope": "user"},
            {"name": "ship", "description": "Ship it.", "scope": "project"},
        ]
    }
    sent = client.post(
        f"/api/sessions/{sid}/prompt", json={"text": "/review notes.txt", "command": True}
    )
    assert sent.status_code == 202
    wait_idle(client, sid)
    refused = client.post(f"/api/sessions/{sid}/prompt", json={"text": "/nosuch", "command": True})
    assert error_of(refused) == (400, "UNKNOWN_COMMAND")
    assert refused.json()["error"]["message"] == (
        "Unknown command /nosuch (commands: /compact [focus], /undo [--dry-run], /context, "
        "/cost, /title [TEXT], /new, /clear, /model [NAME], /retry, /rewind [N], /fork, "
        "/approval [MODE], /diff, /help, /init, /review, /ship; // sends /)"
    )
    plain = client.post(f"/api/sessions/{sid}/prompt", json={"text": "/review as typed"})
    assert plain.status_code == 202  # without "command", the text is the prompt
    wait_idle(client, sid)
    assert prompts(env, sid) == ["Review notes.txt for bugs.", "/review as typed"]


def test_the_command_list_reads_the_session_workspace_not_its_info(
    client: TestClient, env: WebEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The list needs the session's workspace only: neither for a session open here nor for
    one read from the store are the info's figures summed over its log (``info``, ``figures``),
    which on a long session cost what the whole log costs to fold."""
    (env.workspace / ".dsh" / "commands").mkdir(parents=True)
    (env.workspace / ".dsh" / "commands" / "ship.md").write_text("Ship it.")
    with Session.create(env.store, cwd=env.workspace) as stored:
        append_chat_turn(stored, "a question", "an answer")
    opened = new_session(client)
    built: list[str] = []
    for owner, name in ((SessionRegistry, "info"), (session_info, "figures")):
        real = getattr(owner, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            built.append(_name)
            return _real(*args)

        monkeypatch.setattr(owner, name, counted)
    for sid in (opened, stored.id):
        listed = client.get(f"/api/sessions/{sid}/commands")
        assert listed.json() == {
            "commands": [INIT, {"name": "ship", "description": "Ship it.", "scope": "project"}]
        }
    assert built == []
    assert client.get(f"/api/sessions/{stored.id}").status_code == 200  # the spies do count
    assert built == ["info", "figures"]
    assert error_of(client.get("/api/sessions/20990101-nosuch/commands")) == (
        404,
        "SESSION_NOT_FOUND",
    )


def test_a_command_file_named_new_or_clear_is_skipped_as_in_the_terminal_ui(
    client: TestClient, env: WebEnv
) -> None:
    """``/new`` and ``/clear`` are the terminal UI's built-ins: the page does not list a file
    named so either, and refuses ``/new`` naming the commands it has."""
    (dsh_home() / "commands").mkdir(parents=True)
    (dsh_home() / "commands" / "new.md").write_text("Write a new module.")
    (dsh_home() / "commands" / "clear.md").write_text("Clear the cache.")
    (dsh_home() / "commands" / "review.md").write_text("Review it.")
    sid = new_session(client)
    listed = client.get(f"/api/sessions/{sid}/commands").json()["commands"]
    assert [command["name"] for command in listed] == ["init", "review"]
    refused = client.post(f"/api/sessions/{sid}/prompt", json={"text": "/new", "command": True})
    assert error_of(refused) == (400, "UNKNOWN_COMMAND")
    assert refused.json()["error"]["message"] == (
        "Unknown command /new (commands: /compact [focus], /undo [--dry-run], /context, /cost, "
        "/title [TEXT], /new, /clear, /model [NAME], /retry, /rewind [N], /fork, "
        "/approval [MODE], /diff, /help, /init, /review; // sends /)"
    )


def test_init_is_sent_as_dshs_own_prompt_command(client: TestClient, env: WebEnv) -> None:
    """``/init`` needs no page code of its own: the server sends its prompt as any command's."""
    from dsh.agent.init_command import INIT_TEMPLATE

    sid = new_session(client)
    sent = client.post(f"/api/sessions/{sid}/prompt", json={"text": "/init", "command": True})
    assert sent.status_code == 202
    wait_idle(client, sid)
    assert prompts(env, sid) == [INIT_TEMPLATE]
