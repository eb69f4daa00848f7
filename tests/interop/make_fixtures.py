"""Write the TypeScript-harness (upstream) logs under ``fixtures/``, one per import item.

Run ``uv run python -m tests.interop.make_fixtures`` from the repository root. The logs are
written from the public description of the upstream format (docs/interop.md), not copied from
upstream: plain dicts in its shapes, fixed ids and times, so the files are deterministic; a test
checks they still match this script.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
T0 = 1_767_225_600_000
MODEL = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}


class Log:
    """An upstream log being written: header, then rows with seq = index."""

    def __init__(self, ident: str, **header: Any) -> None:
        self.rows: list[dict[str, Any]] = [
            {
                "type": "session",
                "version": 0,
                "id": ident,
                "cwd": "/home/ana/proj",
                "createdAt": T0,
                "delegationDepth": 0,
                **header,
            }
        ]
        self.rows[0] = {k: v for k, v in self.rows[0].items() if v is not None}
        self.seq = 0

    def add(self, kind: str, data: dict[str, Any], **envelope: Any) -> int:
        seq = self.seq
        row = {"type": kind, "seq": seq, "time": T0 + 100 * (seq + 1), "data": data, **envelope}
        self.rows.append(row)
        self.seq += 1
        return seq

    def packed(self, kind: str, data: dict[str, Any], count: int) -> list[int]:
        seqs = list(range(self.seq, self.seq + count))
        self.rows.append(
            {"type": kind, "seq0": self.seq, "time0": T0 + 100 * (self.seq + 1), "data": data}
        )
        self.seq += count
        return seqs

    def user(self, text: str, ident: str, source: dict[str, Any] | None = None) -> int:
        message = {"id": ident, "role": "user", "content": [{"type": "text", "text": text}]}
        message["source"] = source or {"kind": "user"}
        return self.add("user/message", message, surfaceOp="append")

    def assistant(self, turn: int, step: int, content: list[Any], ident: str, cites=()) -> int:
        message = {"id": ident, "role": "assistant", "content": content, "source": MODEL}
        data = {"turn": turn, "step": step, "message": message}
        data["usage"] = {"inputTokens": 200, "outputTokens": 20, "cacheReadTokens": 100}
        return self.add("assistant/message", data, surfaceOp="append", sourceEventSeqs=list(cites))

    def tool(self, turn: int, step: int, call_id: str, name: str, args: str, output: str) -> int:
        call = self.add(
            "tool/call",
            {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": args},
        )
        block = {
            "type": "tool-result",
            "toolCallId": call_id,
            "content": [{"type": "text", "text": output}],
        }
        message = {
            "id": f"r-{call_id}",
            "role": "user",
            "content": [block],
            "source": {"kind": "tool", "callId": call_id},
        }
        data = {"turn": turn, "step": step, "message": message}
        return self.add("tool/result", data, surfaceOp="append", sourceEventSeqs=[call])

    def chat_turn(self, turn: int, prompt: str, answer: str, *, header: bool = False) -> None:
        self.add("turn/start", {"turn": turn})
        self.add("step/start", {"turn": turn, "step": 1})
        self.user(prompt, f"u{turn}")
        if header:
            self.header()
        self.assistant(turn, 1, [{"type": "text", "text": answer}], f"a{turn}")
        self.end(turn, 1)

    def header(self) -> None:
        config = {"provider": "deepseek", "model": "deepseek-chat", "maxTokens": 4096}
        body = {"config": config, "system": "You are a careful coding agent.", "tools": []}
        self.add("request/header", {"header": body, "reason": "initial"})

    def end(self, turn: int, steps: int, kind: str = "completed") -> None:
        self.add("step/end", {"turn": turn, "step": steps})
        self.add("turn/end", {"turn": turn, "reason": {"kind": kind}})

    def write(self, name: str) -> None:
        text = "".join(
            json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in self.rows
        )
        (FIXTURES / name).write_text(text, encoding="utf-8")


def tool_turn(log: Log, turn: int) -> None:
    """A prompt, a read_file call whose (role user) result holds a literal, and an answer."""
    log.add("turn/start", {"turn": turn})
    log.add("step/start", {"turn": turn, "step": 1})
    log.user("What does notes.txt say?", f"u{turn}")
    call = {
        "type": "tool-call",
        "id": "call-1",
        "name": "read_file",
        "arguments": '{"path":"notes.txt"}',
    }
    log.assistant(turn, 1, [{"type": "reasoning", "text": "Read it."}, call], f"a{turn}")
    log.tool(turn, 1, "call-1", "read_file", '{"path":"notes.txt"}', "launch code: PURPLE-42")
    log.add("step/end", {"turn": turn, "step": 1})
    log.add("step/start", {"turn": turn, "step": 2})
    log.assistant(turn, 2, [{"type": "text", "text": "It holds the launch code."}], f"a{turn}b")
    log.end(turn, 2)


def header_v0() -> None:
    log = Log(
        "0b8e1f8a-0001-4d0e-9a51-5e0c9b1f0a01",
        cwd=None,
        delegationDepth=1,
        origin={"kind": "delegate", "parentCallId": "call-9"},
        agentPreset="explore",
    )
    log.chat_turn(1, "List the TODO markers.", "There are two TODO markers.", header=True)
    log.write("01-header-v0.jsonl")


def tool_result_role() -> None:
    log = Log("0b8e1f8a-0002-4d0e-9a51-5e0c9b1f0a02")
    tool_turn(log, 1)
    log.write("02-tool-result-role.jsonl")


def block_summary() -> None:
    """Two turns, a pruned tool result, a manual compaction of the first turn, one more turn."""
    log = Log("0b8e1f8a-0003-4d0e-9a51-5e0c9b1f0a03")
    tool_turn(log, 1)  # seqs 0..10: user 2, assistant 3, call 4, result 5, assistant 8
    log.chat_turn(2, "Anything else in there?", "Nothing else.")  # 11..16
    log.add(
        "compaction/prune",
        {"shadowedRange": {"start": 5, "end": 5}, "shadowedSeqs": [5], "shadowedTokenCount": 15},
    )
    block = {
        "type": "tool-result",
        "toolCallId": "call-1",
        "content": [{"type": "text", "text": "launch code: [… middle pruned …]"}],
    }
    pruned = {
        "id": "r-call-1-pruned",
        "role": "user",
        "content": [block],
        "source": {"kind": "tool", "callId": "call-1"},
    }
    log.add(
        "tool/result",
        {"turn": 1, "step": 1, "message": pruned},
        surfaceOp={"op": "replace", "start": 5, "end": 5},
        sourceEventSeqs=[5],
    )
    log.add("command/run", {"commandId": "cmd-1", "name": "compact", "args": ""})
    shadowed = [2, 3, 18, 8, 13, 14]
    start = log.add(
        "compaction/start", {"compactionId": "cmp-1", "sourceCommandId": "cmd-1", "turn": None}
    )
    bare = "## Request\n- read notes.txt (launch code PURPLE-42)\n## Current work\n- (none)"
    summary = log.add(
        "compaction/summary",
        {
            "compactionId": "cmp-1",
            "sourceCommandId": "cmd-1",
            "summary": [{"type": "text", "text": bare}],
            "shadowedRange": {"start": 2, "end": 14},
            "shadowedSeqs": shadowed,
            "shadowedTokenCount": 96,
            "provider": "deepseek",
            "model": "deepseek-chat",
            "maxTokens": 8192,
            "usage": {"inputTokens": 300, "outputTokens": 40},
            "rawOutput": [{"type": "text", "text": bare}],
            "llmStreamCall": True,
        },
    )
    framed = (
        "[This is an automatically generated checkpoint of earlier conversation. "
        "Treat it as background you already know and continue the work without "
        "acknowledging it.]\n<compacted-summary>\n"
        f"{bare}\n</compacted-summary>"
    )
    source = {
        "kind": "plugin",
        "plugin": "compact",
        "compactionId": "cmp-1",
        "sourceCommandId": "cmd-1",
    }
    message = {
        "id": "ckpt-1",
        "role": "user",
        "content": [{"type": "text", "text": framed}],
        "source": source,
    }
    log.add(
        "user/message",
        message,
        surfaceOp={"op": "replace", "start": 2, "end": 14},
        sourceEventSeqs=[start, summary, *shadowed],
    )
    log.add("compaction/end", {"compactionId": "cmp-1", "sourceCommandId": "cmd-1", "turn": None})
    log.add(
        "command/done",
        {
            "commandId": "cmd-1",
            "ok": True,
            "text": "Compacted 6 history items (~96 tokens)",
            "sourceEventSeq": summary,
        },
    )
    log.chat_turn(3, "Remind me what the note said.", "It said the launch code.")
    log.write("03-block-summary.jsonl")


def stream_chunks() -> None:
    """A failed attempt (error finish) and its retry, streamed chunk by chunk."""
    log = Log("0b8e1f8a-0004-4d0e-9a51-5e0c9b1f0a04")
    log.add("turn/start", {"turn": 1})
    log.add("step/start", {"turn": 1, "step": 1})
    log.user("Run the tests.", "u1")
    chunk = lambda c: log.add("assistant/chunk", {"turn": 1, "step": 1, "chunk": c})  # noqa: E731
    chunk({"type": "block-start", "index": 0, "block": {"type": "text"}})
    chunk(
        {
            "type": "finish",
            "reason": {
                "kind": "error",
                "failure": {
                    "code": "CONTEXT_WINDOW_EXCEEDED",
                    "message": "prompt too long",
                    "retryable": False,
                },
            },
        }
    )
    cites = [
        chunk({"type": "block-start", "index": 0, "block": {"type": "reasoning"}}),
        chunk({"type": "reasoning-delta", "index": 0, "delta": "Use bash."}),
        chunk({"type": "block-end", "index": 0}),
        chunk(
            {
                "type": "block-start",
                "index": 1,
                "block": {"type": "tool-call", "id": "call-7", "name": "bash"},
            }
        ),
        chunk(
            {
                "type": "tool-call-delta",
                "index": 1,
                "id": "call-7",
                "name": "bash",
                "delta": '{"command":',
            }
        ),
        chunk({"type": "tool-call-delta", "index": 1, "id": "call-7", "delta": '"pytest -q"}'}),
        chunk({"type": "block-end", "index": 1}),
        chunk({"type": "usage", "usage": {"inputTokens": 50, "outputTokens": 12}}),
        chunk({"type": "finish", "reason": {"kind": "tool-calls"}}),
    ]
    call = {
        "type": "tool-call",
        "id": "call-7",
        "name": "bash",
        "arguments": '{"command":"pytest -q"}',
    }
    log.assistant(1, 1, [{"type": "reasoning", "text": "Use bash."}, call], "a1", cites)
    log.tool(1, 1, "call-7", "bash", '{"command":"pytest -q"}', "3 passed")
    log.add("step/end", {"turn": 1, "step": 1})
    log.add("step/start", {"turn": 1, "step": 2})
    text = [
        chunk({"type": "text-delta", "index": 0, "delta": "All "}),
        chunk({"type": "text-delta", "index": 0, "delta": "green."}),
    ]
    for row in log.rows[-2:]:
        row["data"]["step"] = 2
    log.assistant(1, 2, [{"type": "text", "text": "All green."}], "a1b", text)
    log.end(1, 2)
    log.write("04-stream-chunks.jsonl")


def packed_rows() -> None:
    log = Log("0b8e1f8a-0005-4d0e-9a51-5e0c9b1f0a05")
    log.add("turn/start", {"turn": 1})
    log.add("step/start", {"turn": 1, "step": 1})
    log.user("Say hello, then list the files.", "u1")
    cites = log.packed(
        "reasoning-chunks",
        {"turn": 1, "step": 1, "index": 0, "dt": [0, 3, 5], "texts": ["Gr", "eet", " first."]},
        3,
    )
    cites += log.packed(
        "text-chunks",
        {
            "turn": 1,
            "step": 1,
            "index": 1,
            "dt": [2, 4, 4, 1],
            "texts": ["Hel", "lo", " the", "re."],
        },
        4,
    )
    cites += log.packed(
        "tool-call-chunks",
        {
            "turn": 1,
            "step": 1,
            "index": 2,
            "id": "call-3",
            "name": "list_dir",
            "dt": [1, 1, 2],
            "args": ['{"pa', 'th":', '"."}'],
        },
        3,
    )
    blocks = [
        {"type": "reasoning", "text": "Greet first."},
        {"type": "text", "text": "Hello there."},
        {"type": "tool-call", "id": "call-3", "name": "list_dir", "arguments": '{"path":"."}'},
    ]
    log.assistant(1, 1, blocks, "a1", cites)
    log.tool(1, 1, "call-3", "list_dir", '{"path":"."}', "README.md\nsrc/")
    log.add("step/end", {"turn": 1, "step": 1})
    log.add("step/start", {"turn": 1, "step": 2})
    log.assistant(1, 2, [{"type": "text", "text": "Two entries."}], "a1b")
    log.end(1, 2)
    log.write("05-packed-rows.jsonl")


def foreign_events() -> None:
    log = Log("0b8e1f8a-0006-4d0e-9a51-5e0c9b1f0a06")
    log.add("session/title", {"title": "TODO hunt"})
    log.add("turn/start", {"turn": 1})
    log.add("agent/inbox/spliced", {"turn": 1, "messages": 1})
    log.add("step/start", {"turn": 1, "step": 1})
    log.user("Find the TODOs.", "u1")
    log.add("plan/mode", {"enabled": True})
    log.add("goal/change", {"goal": "find TODOs"})
    log.add("approval/requested", {"callId": "call-2", "tool": "bash"})
    log.add("approval/resolved", {"callId": "call-2", "decision": "allow"})
    log.add("hook/started", {"hook": "pre-step", "id": "h1"})
    log.add("hook/finished", {"hook": "pre-step", "id": "h1", "ok": True})
    log.add("llm/retry-started", {"attempt": 1, "delayMs": 250})
    log.add("llm/retry", {"attempt": 1, "reason": "rate limited", "delayMs": 250})
    log.assistant(1, 1, [{"type": "text", "text": "One TODO in main.py."}], "a1")
    log.end(1, 1)
    log.write("06-foreign-events.jsonl")
    bad = Log("0b8e1f8a-0066-4d0e-9a51-5e0c9b1f0a66")
    bad.chat_turn(1, "Hi", "Hello")
    note = {
        "id": "n1",
        "role": "user",
        "content": [{"type": "text", "text": "pinned"}],
        "source": {"kind": "user"},
    }
    bad.add("note/pinned", note, surfaceOp="append")
    bad.write("06-foreign-surface-event.jsonl")


def source_extras() -> None:
    log = Log("0b8e1f8a-0007-4d0e-9a51-5e0c9b1f0a07")
    log.add("turn/start", {"turn": 1})
    log.add("step/start", {"turn": 1, "step": 1})
    log.user(
        "Follow AGENTS.md.", "i1", {"kind": "agent-instructions", "sections": ["style", "tests"]}
    )
    log.user(
        "Context: branch main.",
        "p1",
        {"kind": "plugin", "plugin": "git", "form": "context", "rpcId": 4},
    )
    log.user("Fix the flaky test.", "u1", {"kind": "user", "rpcId": 7})
    message = {
        "id": "a1",
        "role": "assistant",
        "content": [{"type": "text", "text": "Fixed."}],
        "source": {**MODEL, "replayState": {"cursor": 3}},
    }
    log.add(
        "assistant/message",
        {"turn": 1, "step": 1, "message": message},
        surfaceOp="append",
        sourceEventSeqs=[],
    )
    log.end(1, 1, kind="blocked")
    log.write("07-source-extras.jsonl")


def main() -> None:
    FIXTURES.mkdir(exist_ok=True)
    for build in (
        header_v0,
        tool_result_role,
        block_summary,
        stream_chunks,
        packed_rows,
        foreign_events,
        source_extras,
    ):
        build()


if __name__ == "__main__":
    main()
