"""The loop against a real HTTP server on 127.0.0.1 speaking the OpenAI streaming format."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dsh.events import AssistantMessageEvent, LlmRetryEvent, encode_event
from dsh.llm.openai_compat import OpenAICompatProvider
from tests.agent.conftest import Harness, run
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_error, openai_text

SECRET = "sk-test-SECRET-4242"


def test_a_retryable_error_is_retried_and_logged_as_an_ignorable_retry(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    server.queue(json_error(503, {"error": {"message": "overloaded"}}), openai_text("fine now"))
    agent = harness.agent([])
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", SECRET)
    result = run(agent.run_turn("hello"))
    assert result.reason == "completed" and result.text == "fine now"
    retries = [e for e in harness.session.events if isinstance(e, LlmRetryEvent)]
    assert len(retries) == 1 and retries[0].ignorable and retries[0].data.code == "UNAVAILABLE"
    assert sum(isinstance(e, AssistantMessageEvent) for e in harness.session.events) == 1
    assert len(server.requests) == 2


def test_the_api_key_never_enters_the_log(tmp_path: Path, server: FakeServer):  # noqa: F811
    server.queue(openai_text("answer one"), openai_text("answer two"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update({"DSH_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": SECRET})
    dsh = str(Path(sys.executable).with_name("dsh"))
    out = subprocess.run(
        [
            dsh,
            "run",
            "--provider",
            "openai-compatible",
            "--base-url",
            server.url + "/v1",
            "--model",
            "m",
            "one",
            "two",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.splitlines()[:2] == ["answer one", "answer two"]
    assert server.requests[0].headers.get("authorization") == f"Bearer {SECRET}"
    logs = list((tmp_path / "home").rglob("*"))
    assert logs
    for path in logs:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_events_of_a_real_http_turn_encode_losslessly(harness: Harness, server: FakeServer):  # noqa: F811
    server.queue(
        openai_text(
            "ok", usage={"prompt_tokens": 50, "completion_tokens": 2, "prompt_cache_hit_tokens": 32}
        )
    )
    agent = harness.agent([])
    agent.provider = OpenAICompatProvider("deepseek", "m", server.url + "/v1", SECRET)
    run(agent.run_turn("hi"))
    message = next(e for e in harness.session.events if isinstance(e, AssistantMessageEvent))
    assert message.data.usage.cache_read_tokens == 32
    assert message.data.usage.input_tokens == 18
    reopened = harness.reopen()
    assert [encode_event(e) for e in reopened.events] == [
        encode_event(e) for e in harness.session.events
    ]
