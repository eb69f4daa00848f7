"""A summariser on another Anthropic model, over real HTTP (issue 12, compact layout).

A stand-in for the Messages API on 127.0.0.1 enforces two of its request rules — tool-call and
tool-result blocks need ``tools`` in the request; the first message is the user's — and answers
a pass call in the labelled sections it names. The compact pass must land in one call that
breaks neither rule; before the span went as transcript text, every compact call carried the
slice's tool blocks with no tools and was refused, so no pass could land.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dsh.compaction import ModelSummarizer
from dsh.compaction.prompts import join_pass_answer
from dsh.llm.anthropic import AnthropicProvider
from tests.agent.conftest import run
from tests.compaction.test_recallable import assert_layout, engine_for, long_session
from tests.llm.fake_server import Canned, FakeServer, Recorded, anthropic_text, json_error

STATE = "## Goal\n- keep going\n## Decisions\n- none\n## Current state\n- ok\n## Constraints\n"
STATE += "- none\n## Next steps\n- continue"


def _refusal(message: str) -> Canned:
    return json_error(
        400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    )


class MessagesApiRules(FakeServer):
    """Refuses what the Messages API refuses (two rules); answers every other call with one
    section per marker line of its instruction."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[str] = []

    def _next(self, recorded: Recorded) -> Canned:
        with self._lock:
            self.requests.append(recorded)
        body: dict[str, Any] = recorded.body
        messages = body["messages"]
        types = {
            block.get("type")
            for message in messages
            if isinstance(message["content"], list)
            for block in message["content"]
        }
        if types & {"tool_use", "tool_result"} and not body.get("tools"):
            self.refused.append("tools")
            return _refusal(
                "Requests which include tool_use or tool_result blocks must define tools."
            )
        if messages[0]["role"] != "user":
            self.refused.append("first")
            return _refusal('messages: first message must use the "user" role')
        last = json.dumps(messages[-1]["content"])
        labels = re.findall(r"=== (stub \d+|state) ===", last)
        sections = [
            (label, STATE if label == "state" else "Read and ran the module tests.")
            for label in labels
        ]
        return anthropic_text(join_pass_answer(sections) if sections else STATE)


def test_a_compact_pass_on_another_anthropic_model_lands_in_one_accepted_call():
    session = long_session(turns=8)
    with MessagesApiRules() as server:
        provider = AnthropicProvider("anthropic", "small-model", server.url, "sk-ant-test")
        summarizer = ModelSummarizer(provider, "small-model", history=session.events)
        result = run(engine_for(session, summarizer).compact_now(window=100_000))
    assert server.refused == []
    assert len(server.requests) == 1  # the whole pass in one call
    assert result is not None and len(result.checkpoints) >= 3
    summaries = [session.events[c.summary_seq].data for c in result.checkpoints]
    assert all(s.degraded is None for s in summaries)
    assert "Read and ran the module tests." in summaries[0].summary
    assert_layout(session)
