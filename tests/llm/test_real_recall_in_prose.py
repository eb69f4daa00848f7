"""A recall question answered by a real small model that wrote its search inside prose.

Recorded on 5 December 2026: Qwen2.5-Coder 1.5B Q4_K_M on llama.cpp ``llama-server`` (``-c 8192
--jinja``, the server's default sampling) continuing a session whose early turns a keyless
``dsh run`` wrote and ``dsh compact`` compacted (the facts only in the originals). Asked "How
often does the flaky test fail? Verify it with history_search.", it wrote one sentence, a
``history_search`` call in a ```json fence, then what it imagined the search would show. The
call was taken out of the prose, ran, found the fact in the originals, and the model answered
with it. Before calls were taken out of prose the reply stayed text and nothing was searched.
The log is as recorded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from dsh.events import Message, ModelSource, TextBlock
from dsh.llm.text_tool_calls import recover_reply
from dsh.recall import search_history
from dsh.store import JsonlStore
from dsh.surface import Session

FIXTURE = (
    Path(__file__).parents[1] / "fixtures" / "sessions" / "real-qwen2.5-coder-1.5b-recall.jsonl"
)
READ_ONLY = {"read_file", "list_dir", "glob", "grep", "history_search", "history_read"}
WRITES = {"write_file", "edit_file", "bash", "todo_write"}


def lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def last_turn(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    start = max(i for i, e in enumerate(events) if e["type"] == "turn/start")
    return events[start:]


def test_the_recording_is_a_real_model_that_wrote_its_search_inside_prose() -> None:
    turn = last_turn(lines())
    header = next(e for e in lines() if e["type"] == "request/header" and "qwen" in json.dumps(e))
    assert header["data"]["header"]["config"]["provider"] == "openai-compatible"
    first = next(e for e in turn if e["type"] == "assistant/message")
    raw = first["data"]["recoveredFromText"]
    assert raw.startswith("To verify the flaky test failure, I'll use `history_search`")
    assert raw.index("```json") > 0 and "After running this" in raw  # prose after the fence
    kept = [b["text"] for b in first["data"]["message"]["content"] if b["type"] == "text"]
    assert kept == [
        "To verify the flaky test failure, I'll use `history_search` to find relevant messages."
    ]
    (call,) = [e for e in turn if e["type"] == "tool/call"]
    assert call["data"]["name"] == "history_search" and call["data"]["fromText"] is True
    answer = [e for e in turn if e["type"] == "assistant/message"][-1]
    final = "".join(b["text"] for b in answer["data"]["message"]["content"] if b["type"] == "text")
    assert "fails one run in twenty" in final


def test_recovering_the_recorded_reply_again_gives_the_logged_call() -> None:
    turn = last_turn(lines())
    first = next(e for e in turn if e["type"] == "assistant/message")
    raw = first["data"]["recoveredFromText"]
    message = Message(
        id="a", role="assistant", content=(TextBlock(raw),), source=ModelSource("p", "m")
    )
    tools = READ_ONLY | WRITES

    def registered(name: str, arguments: str) -> bool:
        return name in tools

    def reads(name: str, arguments: str) -> bool:
        return name in READ_ONLY

    found = recover_reply(message, registered, "text-17-1", in_prose=reads)
    assert found is not None and found.from_prose
    (block,) = found.message.tool_calls()
    (call,) = [e for e in turn if e["type"] == "tool/call"]
    assert (block.name, json.loads(block.arguments)) == (
        call["data"]["name"],
        json.loads(call["data"]["arguments"]),
    )
    assert recover_reply(message, registered, "text-17-1") is None  # not without in_prose


def test_the_search_the_model_asked_for_finds_the_fact_in_the_originals(tmp_path: Path) -> None:
    session_id = lines()[0]["id"]
    (tmp_path / "sessions" / session_id).mkdir(parents=True)
    shutil.copyfile(FIXTURE, tmp_path / "sessions" / session_id / "session.jsonl")
    session = Session.open(JsonlStore(tmp_path), session_id)
    events = list(session.events)
    session.close()
    turn = last_turn(lines())
    (call,) = [e for e in turn if e["type"] == "tool/call"]
    (logged,) = [e for e in turn if e["type"] == "tool/result"]
    start = next(i for i, e in enumerate(events) if e.seq == turn[0]["seq"])
    arguments = json.loads(call["data"]["arguments"])
    again = search_history(events[:start], arguments["query"], checkpoint=arguments["checkpoint"])
    text = logged["data"]["message"]["content"][0]["content"][0]["text"]
    assert again.text == text
    assert "fails one run in twenty" in text
