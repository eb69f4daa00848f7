"""Every model request is rebuilt byte-equal from the log prefix, on the wire of each HTTP
provider (docs/architecture.md, "Requests are a function of the log"): the loop talks to a fake
server through the real adapter, then the requests rebuilt from the stored log go through a fresh
adapter to a second server, and the two servers must have received the same bodies — reasoning
passed back, tool calls and results, a compaction checkpoint in place of its span."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dsh.agent import rebuild_requests
from dsh.compaction import BasicBackend, CompactionEngine, ExtractiveSummarizer
from dsh.config import CompactionSettings
from dsh.llm.anthropic import AnthropicProvider
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.types import ModelRequest
from tests.agent.conftest import Harness, run
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import (
    Canned,
    FakeServer,
    an_block_start,
    an_block_stop,
    an_delta,
    an_message_end,
    an_message_start,
    an_text_block,
    anthropic_stream,
    anthropic_text,
    oa_chunk,
    oa_tool_call,
    oa_usage,
    openai_stream,
    openai_text,
)

SETTINGS = CompactionSettings(backend="basic", retain_tokens=40, chunk_tokens=400, stub_tokens=50)
PROMPTS = ("read a.txt and b.txt", "and what about c?", "summarise everything")


def _openai_tool_reply(turn: int) -> Canned:
    return openai_stream(
        oa_chunk(reasoning=f"I should read the files ({turn})."),
        oa_chunk(content="Reading them."),
        oa_chunk(
            tool_calls=[
                oa_tool_call(0, id=f"t{turn}a", name="read_file", arguments='{"path": "a.txt"}'),
                oa_tool_call(1, id=f"t{turn}b", name="read_file", arguments='{"path": "b.txt"}'),
            ]
        ),
        oa_chunk(finish="tool_calls"),
        oa_chunk(no_choices=True, usage=oa_usage(120, 9, cache_hit=64)),
    )


def _anthropic_tool_reply(turn: int) -> Canned:
    return anthropic_stream(
        an_message_start(120, cache_read=64),
        an_block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        an_delta(0, {"type": "thinking_delta", "thinking": f"I should read a.txt ({turn})."}),
        an_delta(0, {"type": "signature_delta", "signature": f"sig-{turn}"}),
        an_block_stop(0),
        *an_text_block(1, "Reading it."),
        an_block_start(
            2, {"type": "tool_use", "id": f"tu{turn}", "name": "read_file", "input": {}}
        ),
        an_delta(2, {"type": "input_json_delta", "partial_json": '{"path": "a.txt"}'}),
        an_block_stop(2),
        *an_message_end("tool_use"),
    )


def _drive(
    harness: Harness,
    fake: FakeServer,
    provider: Any,
    tool_reply: Callable[[int], Canned],
    text_reply: Callable[[str], Canned],
) -> None:
    """Three turns with tool calls, reasoning and a compaction between the second and third."""
    for name in ("a.txt", "b.txt"):
        (harness.workspace / name).write_text(f"contents of {name}\n" * 30)
    agent = harness.agent([])
    agent.provider = provider
    for turn, prompt in enumerate(PROMPTS, start=1):
        fake.queue(tool_reply(turn), text_reply(f"answer {turn}"))
        assert run(agent.run_turn(prompt)).reason == "completed"
        if turn == 2:
            engine = CompactionEngine(
                harness.session,
                BasicBackend(ExtractiveSummarizer(), SETTINGS),
                SETTINGS,
                new_id=lambda: "p1",
            )
            assert run(engine.compact_now(window=10_000)) is not None


def _resend(requests: list[ModelRequest], make: Callable[[str], Any], reply: Canned) -> list[bytes]:
    """The bodies a fresh adapter sends for ``requests`` (answered by canned ``reply``)."""
    with FakeServer() as again:
        again.queue(*[reply] * len(requests))
        provider = make(again.url)

        async def send() -> None:
            for request in requests:
                async for _ in provider.stream(request, history=()):
                    pass

        run(send())
        return [_raw(body) for body in again.bodies]


def _raw(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode()


def _rebuilt(harness: Harness) -> list[ModelRequest]:
    reopened = harness.reopen()  # from the stored log, not the live projection
    return [request for _, request in rebuild_requests(reopened.events)]


def test_every_openai_compatible_request_is_rebuilt_byte_equal_from_the_log_prefix(
    harness: Harness,
    server: FakeServer,  # noqa: F811
) -> None:
    def make(url: str) -> OpenAICompatProvider:
        return OpenAICompatProvider("deepseek", "m", url + "/v1", "sk-test")

    _drive(harness, server, make(server.url), _openai_tool_reply, openai_text)
    sent = [_raw(body) for body in server.bodies]
    assert len(sent) == 2 * len(PROMPTS)
    assert any("reasoning_content" in m for m in server.bodies[1]["messages"])
    assert any("<compacted-summary>" in json.dumps(b) for b in server.bodies[-2:])
    assert _resend(_rebuilt(harness), make, openai_text("x")) == sent


def test_every_anthropic_request_is_rebuilt_byte_equal_from_the_log_prefix(
    harness: Harness,
    server: FakeServer,  # noqa: F811
) -> None:
    def make(url: str) -> AnthropicProvider:
        return AnthropicProvider("anthropic", "m", url, "sk-test")

    _drive(harness, server, make(server.url), _anthropic_tool_reply, anthropic_text)
    sent = [_raw(body) for body in server.bodies]
    assert len(sent) == 2 * len(PROMPTS)
    assert "sig-1" in json.dumps(server.bodies[1]["messages"])
    assert any("<compacted-summary>" in json.dumps(b) for b in server.bodies[-2:])
    assert _resend(_rebuilt(harness), make, anthropic_text("x")) == sent
