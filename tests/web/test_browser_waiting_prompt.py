"""``dsh web`` shows what the terminal UI shows around a compaction pass: a prompt sent while the
automatic pass ahead of its turn runs shows at once below the conversation, marked as waiting
for the pass (the header says "compacting…"), and takes its logged place once the pass ended;
a pass that did not finish is one dim notice with its reason, the terminal UI's words
(``tests/tui/test_waiting_prompt.py``, ``tests/tui/test_load_warnings.py``)."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.config import CompactionSettings, Settings, ToolSettings
from dsh.events import Event
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.tui.live_tail import WAITING_FOR_PASS
from dsh.web import BackgroundServer, WebRuntime
from tests.killed_pass import killed_pass_session
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import open_page, send, view_rows, wait_turn_over

ANSWER = "words " * 150
KILLED = "Compaction pass did not finish: the process ended during the pass"


class HeldSummaries:
    """The scripted provider; a summary call (``purpose = compaction``) waits until ``release``
    is set (a thread's event: the server runs on a loop of its own)."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner, self.name = inner, inner.name
        self.release = threading.Event()
        self.calls = 0

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        if request.purpose == "compaction":
            self.calls += 1
            await asyncio.to_thread(self.release.wait)
        async for event in self.inner.stream(request, history=history):
            yield event


def prompt(i: int) -> str:
    return f"question {i} " + " ".join(["q"] * 300)


def held_server(env: WebEnv) -> tuple[BackgroundServer, HeldSummaries]:
    settings = Settings(
        compaction=CompactionSettings(backend="basic", retain_tokens=200, summarizer="held"),
        tools=ToolSettings(approval="auto"),
    )
    script = [{"text": f"answer {i} {ANSWER}"} for i in range(12)]
    scripted = ScriptedProvider(script, model="scripted", summaries=[{"text": "the state"}])
    held = HeldSummaries(scripted)
    runtime = WebRuntime(settings, Route(held, "scripted", env.window))
    return BackgroundServer(env.app(runtime)).start(), held


def until_a_pass_holds_a_prompt(page: Any, held: HeldSummaries) -> str:
    """Send prompts, each turn run to its end, until one's turn starts a pass (held); that
    prompt."""
    page.click("#new-session")
    page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
    for i in range(12):
        send(page, prompt(i))
        page.wait_for_function(
            """(answer) => window.dsh.info.running === null
                && [...document.querySelectorAll('#log .row')]
                    .some((row) => row.textContent.includes(answer))
                || document.querySelector('#waiting-prompt .waiting-note').textContent""",
            arg=f"answer {i} ",
        )
        if held.calls:
            return prompt(i)
    raise AssertionError("no pass started")


def test_a_prompt_sent_while_a_pass_runs_shows_at_once_then_takes_its_logged_place(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    server, held = held_server(env)
    try:
        with open_page(browser) as page:
            page.goto(f"{server.base_url}/?token={TOKEN}")
            sent = until_a_pass_holds_a_prompt(page, held)
            assert page.inner_text("#waiting-prompt .body") == sent
            assert page.inner_text("#waiting-prompt .waiting-note") == WAITING_FOR_PASS
            assert page.inner_text("#progress").startswith("compacting")
            assert not [row for row in view_rows(page, ".row.user") if sent in row]
            held.release.set()
            wait_turn_over(page, sent.replace("question", "answer").split(" q")[0] + " ")
            assert page.is_hidden("#waiting-prompt")
            assert len([row for row in view_rows(page, ".row.user") if sent in row]) == 1
            assert page.input_value("#prompt") == ""
    finally:
        held.release.set()
        server.stop()


def test_a_turn_that_ends_before_its_prompt_is_logged_gives_the_prompt_back_to_the_box(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk goes read-only while the pass runs: the prompt never reaches the log, and the
    turn fails; the prompt is back in the box, before what was typed since."""
    env = make_env(tmp_path)
    server, held = held_server(env)

    write = os.write

    def refused(fd: int, data: bytes) -> int:  # a session log's writes only
        if not os.readlink(f"/proc/self/fd/{fd}").endswith("session.jsonl"):
            return write(fd, data)
        raise OSError(errno.EROFS, "Read-only file system")

    try:
        with open_page(browser) as page:
            page.goto(f"{server.base_url}/?token={TOKEN}")
            sent = until_a_pass_holds_a_prompt(page, held)
            page.fill("#prompt", "typed meanwhile")
            monkeypatch.setattr("dsh.store.jsonl.os.write", refused)
            held.release.set()
            page.wait_for_function(
                "() => window.dsh.info.running === null"
                " && document.getElementById('waiting-prompt').hidden"
            )
            monkeypatch.undo()
            assert page.input_value("#prompt") == f"{sent}\ntyped meanwhile"
            assert not [row for row in view_rows(page, ".row.user") if sent in row]
    finally:
        held.release.set()
        server.stop()


def test_a_pass_a_dead_process_left_open_is_one_notice_once_the_session_is_resumed(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    session_id = killed_pass_session(env.store.home, env.workspace, "turn")
    server = BackgroundServer(env.app()).start()
    try:
        with open_page(browser) as page:
            page.goto(f"{server.base_url}/?token={TOKEN}#s={session_id}")
            page.wait_for_function("() => window.dsh.info && window.dsh.info.id")
            page.evaluate(
                """async (sid) => {
                    const { api, sessionPath } = await import('/s/api.js');
                    await api('POST', `${sessionPath(sid)}/resume`);
                }""",
                session_id,
            )
            turn = (
                "Turn 9 was interrupted (the process ended mid-turn): "
                "the process ended before the turn finished"
            )
            # both repairs' notices, each its own event: wait for the second one too
            page.wait_for_function(
                "(texts) => texts.every((text) => [...document.querySelectorAll("
                "'#log .row.notice')].some((row) => row.textContent === text))",
                arg=[KILLED, turn],
            )
            notices = view_rows(page, ".row.notice")
            assert notices[-2:] == [KILLED, turn]
    finally:
        server.stop()
