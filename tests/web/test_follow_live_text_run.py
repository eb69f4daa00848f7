"""A page's live stream shows the reply a real ``dsh run`` in another process is streaming, as
it streams: the model (a stand-in server on 127.0.0.1) sends part of a reply and holds the
rest; the page's socket gets that part while the log holds no reply yet, then the logged reply
once, and no streamed text after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from dsh.surface import Session
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, oa_chunk, oa_usage, openai_stream
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import serve

DSH = str(Path(sys.executable).with_name("dsh"))
PARTIAL = "Reading the notes first"
REST = ", then answering."


def logged_types(env: Any, session_id: str) -> list[str]:
    return [json.loads(line)["type"] for line in env.log_lines(session_id)]


def test_a_page_gets_the_reply_another_process_streams_before_it_is_logged_and_once_after(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    release = threading.Event()
    reply = openai_stream(
        oa_chunk(content=PARTIAL),
        oa_chunk(content=REST),
        oa_chunk(finish="stop"),
        oa_chunk(no_choices=True, usage=oa_usage(10, 5)),
    )
    server.queue(Canned(reply.status, reply.headers, reply.parts, hold=release, hold_before=1))
    env = make_env(tmp_path)
    session = Session.create(env.store, cwd=env.workspace)
    sid = session.id
    session.close()
    route = ["--provider", "openai-compatible", "--base-url", server.url + "/v1", "--model", "q"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(env.store.home)
    got: list[dict[str, Any]] = []
    with serve(env) as web:
        port = web.base_url.rsplit(":", 1)[1]
        with connect(
            f"ws://127.0.0.1:{port}/api/sessions/{sid}/live",
            subprotocols=["dsh", f"dsh.token.{TOKEN}"],  # type: ignore[list-item]
            open_timeout=60,
        ) as live:

            def until(kind: str, test: Any = lambda m: True) -> dict[str, Any]:
                while True:
                    message = json.loads(live.recv(timeout=120))
                    got.append(message)
                    if message["kind"] == kind and test(message):
                        return message

            until("hello")
            writer = subprocess.Popen(
                [DSH, "run", "--session", sid, *route, "read the notes"],
                env=environ, cwd=env.workspace, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
            try:
                streamed = ""
                while PARTIAL not in streamed:
                    streamed += until("delta")["text"]
                # the reply is still held by the model: nothing of it is logged yet
                assert "assistant/message" not in logged_types(env, sid)
                assert not any(
                    m["kind"] == "event" and m["event"]["type"] == "assistant/message" for m in got
                )
                release.set()
                until("event", lambda m: m["event"]["type"] == "turn/end")
                _out, err = writer.communicate(timeout=120)
                assert writer.returncode == 0, err.decode()
            finally:
                release.set()
                if writer.poll() is None:
                    writer.kill()
                    writer.wait()
    kinds = [
        m["event"]["type"] if m["kind"] == "event" else m["kind"]
        for m in got
        if m["kind"] in ("event", "delta")
    ]
    assert kinds.count("assistant/message") == 1
    replied = kinds.index("assistant/message")
    assert "delta" not in kinds[replied:]  # the page drops the streamed text: none comes after
    assert kinds.index("delta") > kinds.index("user/message")
    text = "".join(m["text"] for m in got if m["kind"] == "delta")
    assert text.startswith(PARTIAL) and (PARTIAL + REST).startswith(text)
    (message,) = [
        m["event"]
        for m in got
        if m["kind"] == "event" and m["event"]["type"] == "assistant/message"
    ]
    assert message["data"]["message"]["content"][0]["text"] == PARTIAL + REST
    assert not (env.store.home / "cache" / "live" / f"{sid}.live").exists()
