"""An older dsh recorded a base URL's user and password and a secret query value whole in a
``session/settings`` event: ``dsh web`` sends that record to the page as this dsh records one
(masked, ``as_recorded_today``), in a history page and on the live stream alike, over the real
server; every other event goes as logged, and the log is not rewritten."""

from __future__ import annotations

import json

import httpx
from websockets.sync.client import connect

from dsh.web import BackgroundServer
from tests.cli.test_export_masks_recorded_secrets import (
    SHOWN_SUMMARIZER_URL,
    SHOWN_URL,
    append_older_record,
    no_secret,
    older_session,
)
from tests.web.conftest import AUTH, WebEnv

EVENT_PREFIX = '{"kind":"event","event":'


def test_the_history_and_the_live_stream_mask_an_older_records_secrets(env: WebEnv) -> None:
    sid = older_session(env.store.home, env.workspace)
    logged_lines = env.log_lines(sid)
    logged = b"\n".join(logged_lines).decode()
    assert "KEY1" in logged  # what the older dsh wrote
    server = BackgroundServer(env.app()).start()
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=30) as http:
            answer = http.get(f"/api/sessions/{sid}/history")
            assert answer.status_code == 200
            no_secret(answer.text)
            paged = answer.json()["events"]
        url = f"ws://127.0.0.1:{server.port}/api/sessions/{sid}/live?after_seq=-1"
        with connect(url, proxy=None, open_timeout=10, additional_headers=AUTH) as ws:
            raw = [ws.recv(timeout=10) for _ in range(len(logged_lines) + 1)]
            # another process logs one more such record: it comes followed, masked too
            append_older_record(env.store, sid)
            later = ""
            while '"type":"session/settings"' not in later:  # the lock's holder comes too
                later = str(ws.recv(timeout=30))
    finally:
        server.stop()
    assert isinstance(raw[0], str) and json.loads(raw[0])["kind"] == "hello"
    pushed = [str(frame) for frame in raw[1:]]
    assert all(frame.startswith(EVENT_PREFIX) for frame in pushed)
    no_secret("".join(pushed))
    streamed = [json.loads(frame)["event"] for frame in pushed]
    assert streamed == paged
    masked = next(i for i, event in enumerate(streamed) if event["type"] == "session/settings")
    first = streamed[masked]["data"]
    assert (first["baseUrl"], first["compaction"]["summarizerBaseUrl"]) == (
        SHOWN_URL,
        SHOWN_SUMMARIZER_URL,
    )
    # every other event exactly as logged, byte for byte
    others = [frame[len(EVENT_PREFIX) : -1] for i, frame in enumerate(pushed) if i != masked]
    assert others == [line.decode() for i, line in enumerate(logged_lines) if i != masked]
    no_secret(later)
    assert json.loads(later)["event"]["data"]["baseUrl"] == SHOWN_URL
    lines = env.log_lines(sid)
    assert b"\n".join(lines[: len(logged_lines)]).decode() == logged  # the log is not rewritten
    assert b"KEY1" in b"".join(lines[len(logged_lines) :])
