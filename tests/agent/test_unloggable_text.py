"""Text UTF-8 cannot carry (lone UTF-16 surrogates) in a file name, a model reply or a prompt
is made loggable before it is logged: the turn goes on and the log loads, instead of the codec
refusing an event in the middle of the turn (a tool call left without its result)."""

from __future__ import annotations

import os

from dsh.agent import rebuild_requests
from dsh.agent.loggable import loggable_text
from dsh.events import AssistantMessageEvent, ToolResultEvent
from dsh.llm.openai_compat import OpenAICompatProvider
from tests.agent.conftest import Harness, run
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, oa_chunk, oa_usage, openai_stream


def _raw_chunk(content_json: str) -> str:
    """A chunk whose content is written as raw JSON (escapes kept as the server sent them)."""
    return (
        '{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        f'[{{"index":0,"delta":{{"content":{content_json}}},"finish_reason":null}}]}}'
    )


def test_a_file_name_that_is_not_utf8_is_listed_and_the_turn_completes(harness: Harness):
    name = os.path.join(os.fsencode(harness.workspace), b"bad\xff.txt")
    os.close(os.open(name, os.O_CREAT | os.O_WRONLY))
    script = [{"toolCalls": [{"name": "list_dir", "arguments": {}}]}, {"text": "listed"}]
    result = run(harness.agent(script).run_turn("what is here?"))
    assert result.reason == "completed" and result.text == "listed"
    (tool_result,) = [e for e in harness.session.events if isinstance(e, ToolResultEvent)]
    assert "bad\\xff.txt" in tool_result.data.message.content[0].content[0].text
    assert len(harness.reopen().events) == len(harness.session.events)


def test_a_model_reply_with_surrogate_escapes_is_logged_and_sent_back_as_logged(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    server.queue(
        openai_stream(
            _raw_chunk('"half \\ud83d"'),
            _raw_chunk('"\\ude00 joined, lone \\udc00 end"'),
            oa_chunk(finish="stop"),
            oa_chunk(no_choices=True, usage=oa_usage(10, 2)),
        ),
        openai_stream(oa_chunk(content="ok"), oa_chunk(finish="stop")),
    )
    agent = harness.agent([])
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", "k")
    result = run(agent.run_turn("go"))
    assert result.reason == "completed"
    assert result.text == "half \U0001f600 joined, lone \ufffd end"
    run(agent.run_turn("again"))
    reply = next(e for e in harness.session.events if isinstance(e, AssistantMessageEvent))
    assert reply.data.message.text() == result.text
    sent = server.bodies[1]["messages"]
    assert sent[2] == {"role": "assistant", "content": result.text}
    rebuilt = [r for _, r in rebuild_requests(harness.reopen().events)]
    assert rebuilt[1].messages[1].text() == result.text


def test_a_prompt_with_a_lone_surrogate_is_logged(harness: Harness):
    result = run(harness.agent([{"text": "ok"}]).run_turn("look at bad\udcff.txt \ud800"))
    assert result.reason == "completed"
    assert len(harness.reopen().events) == len(harness.session.events)
    ((_, request),) = rebuild_requests(harness.session.events)
    assert request.messages[0].text() == "look at bad\\xff.txt \ufffd"


def test_valid_text_is_returned_unchanged():
    text = "naïve 😀 text"
    assert loggable_text(text) is text
