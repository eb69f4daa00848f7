"""The loop against a real HTTP server on 127.0.0.1 speaking the OpenAI streaming format."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dsh.events import AssistantMessageEvent, LlmRetryEvent, TurnEndEvent, encode_event
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.replay import ReplayProvider
from dsh.surface import Session
from tests.agent.conftest import Harness, run
from tests.agent.test_stream_failures import _comparable
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import (
    FakeServer,
    json_error,
    oa_chunk,
    oa_usage,
    openai_stream,
    openai_text,
)

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
    env["DSH_HOME"] = str(tmp_path / "home")
    env.update({"DSH_PROVIDER_API_KEY_ENV": "LOCAL_SERVER_KEY", "LOCAL_SERVER_KEY": SECRET})
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


def test_a_reply_stopped_by_the_content_filter_ends_the_turn_as_failed_and_keeps_its_text(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    server.queue(
        openai_stream(
            oa_chunk(content="Here is how to"),
            oa_chunk(finish="content_filter"),
            oa_chunk(no_choices=True, usage=oa_usage(10, 4)),
        )
    )
    agent = harness.agent([])
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", SECRET)
    result = run(agent.run_turn("hello"))
    assert result.reason == "error" and result.text == "Here is how to"
    end = next(e for e in harness.session.events if isinstance(e, TurnEndEvent))
    assert end.data.reason.kind == "error"
    assert "content filter" in (end.data.reason.error or "")
    message = next(e for e in harness.session.events if isinstance(e, AssistantMessageEvent))
    assert message.data.message.text() == "Here is how to"


def test_replaying_turns_the_provider_stopped_early_rebuilds_the_same_log(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    def stopped(text: str, finish: str):
        return openai_stream(
            oa_chunk(content=text),
            oa_chunk(finish=finish),
            oa_chunk(no_choices=True, usage=oa_usage(10, 4)),
        )

    server.queue(stopped("cut at", "length"), stopped("filtered", "content_filter"))
    server.queue(openai_text("whole"))
    agent = harness.agent([])
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", SECRET)
    prompts = ["one", "two", "three"]
    assert [run(agent.run_turn(p)).reason for p in prompts] == ["max-tokens", "error", "completed"]
    recorded = list(harness.session.events)
    again = harness.agent([])
    again.session = Session.create(harness.store, cwd=harness.workspace)
    again.provider = ReplayProvider(recorded)
    assert [run(again.run_turn(p)).reason for p in prompts] == ["max-tokens", "error", "completed"]
    assert _comparable(again.session.events) == _comparable(recorded)
