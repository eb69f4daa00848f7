"""dsh on Anthropic's current lineup: Claude Sonnet 5.5 by default (1M window, 128K output),
no request a current model refuses (sampling parameters, manual thinking, forced tool use), its
text between tool calls asked back (``display: summarized``, shown as reasoning), thinking
another model wrote not sent to it, and a retired model said in one line with how to switch."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from dsh.agent.billing import price_of
from dsh.config import ProviderSettings
from dsh.events import Message, ModelSource, ReasoningBlock, TextBlock, ToolCallBlock
from dsh.llm.anthropic import AnthropicProvider
from dsh.llm.errors import ErrorCode
from dsh.llm.registry import (
    KNOWN_PROVIDERS,
    default_max_output_tokens,
    known_window,
    route_params,
)
from dsh.llm.types import ReasoningDelta, TextDelta, ToolCallDelta
from tests.llm.fake_server import (
    FakeServer,
    an_block_start,
    an_block_stop,
    an_delta,
    an_message_end,
    an_message_start,
    anthropic_stream,
    anthropic_text,
    json_error,
)
from tests.llm.provider_helpers import (
    collect,
    collect_until_error,
    make_request,
    tool_result,
    user,
)

KEY = "sk-ant-test-secret"
SONNET_55 = "claude-sonnet-5-5"


def provider(server: FakeServer, model: str, **kwargs: Any) -> AnthropicProvider:
    return AnthropicProvider("anthropic", model, server.url, KEY, **kwargs)


def call(server: FakeServer, model: str, *messages: Message, **kwargs: Any) -> list[Any]:
    """The events of one call to ``model`` (the request names it, as the agent's do)."""
    request = make_request(*messages, provider="anthropic", model=model)
    return collect(provider(server, model, **kwargs).stream(request, history=()))


def test_the_default_model_is_sonnet_5_5_with_its_window_and_output_bound():
    assert KNOWN_PROVIDERS["anthropic"].default_model == SONNET_55
    assert default_max_output_tokens("anthropic", SONNET_55) == 128_000
    assert route_params(ProviderSettings(), "anthropic", SONNET_55) == {"max_tokens": 128_000}
    assert known_window("anthropic", SONNET_55) == 1_000_000
    # A session recorded on an older model keeps its 200K window and 16K bound.
    assert known_window("anthropic", "claude-sonnet-4-5") == 200_000
    assert default_max_output_tokens("anthropic", "claude-sonnet-4-5") == 16_384


def test_sonnet_5_5_is_billed_at_its_own_list_price_and_4_5_sessions_at_theirs():
    new = price_of("anthropic", SONNET_55)
    old = price_of("anthropic", "claude-sonnet-4-5-20250929")
    assert new is not None and old is not None
    assert (new.model, new.input, new.output, new.cache_read, new.cache_write) == (
        SONNET_55,
        2.0,
        10.0,
        0.1,
        1.25,
    )
    assert (old.model, old.input, old.output) == ("claude-sonnet-4-5", 3.0, 15.0)
    # 1M fresh input tokens and 100K output on Sonnet 5.5: $2 + $1.
    assert new.cost(input_tokens=1_000_000, read=0, write=0, output_tokens=100_000) == 3.0


def test_a_configured_temperature_is_not_sent_to_sonnet_5_5_with_one_warning(
    caplog: pytest.LogCaptureFixture,
):
    settings = ProviderSettings(temperature=0.2, top_p=0.9)
    with caplog.at_level(logging.WARNING):
        params = route_params(settings, "anthropic", SONNET_55)
    assert params == {"max_tokens": 128_000}
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert lines == [
        f"provider.temperature/top_p is not sent to {SONNET_55}: Claude Sonnet 5 and later "
        "refuse sampling parameters"
    ]
    # An older model still takes them.
    old = route_params(settings, "anthropic", "claude-sonnet-4-5")
    assert (old["temperature"], old["top_p"]) == (0.2, 0.9)


def test_sonnet_5_5_gets_no_refused_setting_and_asks_its_thinking_summarized(
    server: FakeServer,
):
    server.queue(anthropic_text("ok"), anthropic_text("ok"))
    params = {
        "temperature": 0.0,
        "top_k": 5,
        "thinking": {"type": "enabled", "budget_tokens": 4000},
        "tool_choice": {"type": "any"},
    }
    call(server, SONNET_55, default_params=params)
    call(server, "claude-sonnet-4-5", default_params=params)

    new, old = server.bodies
    assert new["model"] == SONNET_55
    assert not {"temperature", "top_p", "top_k"} & set(new)
    assert new["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert new["tool_choice"] == {"type": "auto"}
    # An older model gets what was configured, as before.
    assert (old["temperature"], old["top_k"], old["thinking"], old["tool_choice"]) == (
        0.0,
        5,
        {"type": "enabled", "budget_tokens": 4000},
        {"type": "any"},
    )


def test_sonnet_5_5_with_nothing_configured_asks_adaptive_thinking_summarized(
    server: FakeServer,
):
    server.queue(anthropic_text("ok"))
    call(server, SONNET_55)
    assert server.bodies[0]["thinking"] == {"type": "adaptive", "display": "summarized"}


def test_text_between_tool_calls_comes_back_as_reasoning(server: FakeServer):
    server.queue(
        anthropic_stream(
            an_message_start(),
            an_block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            an_delta(0, {"type": "thinking_delta", "thinking": "Reading a.py first."}),
            an_delta(0, {"type": "signature_delta", "signature": "SIG"}),
            an_block_stop(0),
            an_block_start(1, {"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}),
            an_delta(1, {"type": "input_json_delta", "partial_json": '{"path": "a.py"}'}),
            an_block_stop(1),
            *an_message_end("tool_use"),
        )
    )
    events = call(server, SONNET_55)

    assert server.bodies[0]["thinking"]["display"] == "summarized"
    shown = [e.text for e in events if isinstance(e, ReasoningDelta) and e.text]
    assert shown == ["Reading a.py first."]
    assert not [e for e in events if isinstance(e, TextDelta)]
    assert any(isinstance(e, ToolCallDelta) and e.name == "read_file" for e in events)


def _reply(model: str, signature: str) -> Message:
    return Message(
        id=f"a-{model}",
        role="assistant",
        content=(
            ReasoningBlock(text=f"thought by {model}", signature=signature),
            TextBlock(text="done"),
            ToolCallBlock(id=f"c-{signature}", name="read_file", arguments="{}"),
        ),
        source=ModelSource(provider="anthropic", model=model),
    )


def test_thinking_another_model_wrote_is_not_sent_to_sonnet_5_5(server: FakeServer):
    server.queue(anthropic_text("ok"), anthropic_text("ok"))
    history = (
        user("go", id="u1"),
        _reply("claude-sonnet-4-5", "OLD"),
        tool_result("c-OLD", "x", id="r1"),
        _reply(SONNET_55, "NEW"),
        tool_result("c-NEW", "y", id="r2"),
    )
    call(server, SONNET_55, *history)
    call(server, "claude-sonnet-4-5", *history)

    def thinking(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            block
            for message in body["messages"]
            for block in message["content"]
            if block["type"] == "thinking"
        ]

    assert thinking(server.bodies[0]) == [
        {"type": "thinking", "thinking": f"thought by {SONNET_55}", "signature": "NEW"}
    ]
    assert [b["signature"] for b in thinking(server.bodies[1])] == ["OLD", "NEW"]


def test_a_retired_model_is_one_line_saying_how_to_switch(server: FakeServer):
    message = "model: claude-sonnet-4-5"
    body = {"type": "error", "error": {"type": "not_found_error", "message": message}}
    server.queue(json_error(404, body))

    events, error = collect_until_error(
        provider(server, "claude-sonnet-4-5").stream(
            make_request(provider="anthropic", model="claude-sonnet-4-5"), history=()
        )
    )

    assert events == []
    assert (error.code, error.retryable, error.status) == (ErrorCode.BAD_REQUEST, False, 404)
    assert str(error) == (
        "BAD_REQUEST: model claude-sonnet-4-5 does not exist on this server or is retired; "
        f"switch with /model {SONNET_55} (or --model {SONNET_55})"
    )


def test_a_session_on_sonnet_5_5_shows_its_1m_window_as_the_known_one():
    import msgspec

    from dsh.agent import session_settings as ss
    from dsh.agent.settings_view import KNOWN, describe
    from dsh.config import Settings

    def recorded(model: str, window: int) -> ss.SessionSettings:
        base = ss.snapshot(Settings(), "anthropic", model, window, "/work/a")
        return msgspec.structs.replace(base, window_asked=False)

    def asked(model: str, window: int) -> str:
        lines = describe(recorded(model, window))
        return next(line for line in lines if line.startswith("window_asked")).split("  ")[-1]

    assert asked(SONNET_55, 1_000_000).strip() == KNOWN
    assert asked("claude-sonnet-4-5", 200_000).strip() == KNOWN
    assert asked("claude-sonnet-4-5", 1_000_000).strip() != KNOWN
