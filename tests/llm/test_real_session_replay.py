"""A session recorded from a real model (Qwen2.5-Coder 0.5B on llama.cpp ``llama-server``, made
by ``benchmarks/real_model.py --record``) replayed keylessly through ``dsh run``.

The fixture pins what the real server did — the window it reported, the cached prompt tokens it
counted, the tool call it made — and the replay pins that dsh turns the same log into the same
conversation again without the server. It was recorded before dsh noticed repeated read-only
calls (``dsh.agent.repeated_calls``): replayed now, each repeat of the model's one ``read_file``
call is told so in its result, and by default the turn stops at the fifth.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from dsh.agent.repeated_calls import with_note
from tests.helpers import run_session_id

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sessions" / "real-qwen2.5-coder-0.5b.jsonl"
DSH = str(Path(sys.executable).with_name("dsh"))
FACT = "ORCHID-4417"


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def test_the_recording_is_small_and_shows_what_the_real_server_did():
    assert FIXTURE.stat().st_size < 300_000
    events = events_of(FIXTURE)
    contexts = of_type(events, "request/context")
    assert {c["data"]["provider"] for c in contexts} == {"openai-compatible"}
    assert contexts[0]["data"]["contextWindow"] == 4096  # discovered from llama.cpp /props
    usages = [m["data"]["usage"] for m in of_type(events, "assistant/message")]
    assert all(u["inputTokens"] > 0 and u["outputTokens"] > 0 for u in usages)
    assert any((u.get("cacheReadTokens") or 0) > 0 for u in usages[1:])  # llama.cpp's cache
    calls = of_type(events, "tool/call")
    assert {c["data"]["name"] for c in calls} == {"read_file"}
    assert all(c["data"].get("fromText") for c in calls)  # never the template's call syntax
    results = of_type(events, "tool/result")
    assert all(FACT in json.dumps(r["data"]) for r in results)
    ends = [e["data"]["reason"]["kind"] for e in of_type(events, "turn/end")]
    assert ends == ["aborted", "completed"]  # it kept re-reading the file until max_steps


def with_repeat_notes(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recording as dsh logs it now: every result after the first of the model's one
    repeated call (same arguments, same text, all in its first turn) ends with the note saying
    how many times the model has got it (2 for the second)."""
    out = json.loads(json.dumps(events))
    results = [e["data"] for e in out if e["type"] == "tool/result"]
    assert {result["turn"] for result in results} == {1}
    for times, result in enumerate(results[1:], start=2):
        block = result["message"]["content"][0]["content"][0]
        block["text"] = with_note(block["text"], times)
    return out


def prepared(tmp_path: Path) -> tuple[list[dict[str, Any]], Path, Path, dict[str, str]]:
    """The recording, a home holding it, the workspace the model read, and dsh's environment."""
    recorded = events_of(FIXTURE)
    session_id = recorded[0]["id"]
    home = tmp_path / "home"
    (home / "sessions" / session_id).mkdir(parents=True)
    shutil.copyfile(FIXTURE, home / "sessions" / session_id / "session.jsonl")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(f"Release notes.\nThe release code is {FACT}.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(home)
    env["DSH_PROVIDER_TEXT_TOOL_CALLS"] = "true"  # on by default only for openai-compatible
    return recorded, home, workspace, env


def prompts_of(recorded: list[dict[str, Any]]) -> list[str]:
    return [
        "".join(b["text"] for b in e["data"]["content"] if b["type"] == "text")
        for e in of_type(recorded, "user/message")
    ]


def test_a_keyless_replay_gives_the_same_conversation(tmp_path):
    recorded, home, workspace, env = prepared(tmp_path)
    session_id = recorded[0]["id"]
    prompts = prompts_of(recorded)
    env["DSH_TOOLS_MAX_REPEATED_CALLS"] = "0"  # as recorded: nothing stopped the repeats
    replay = [DSH, "run", "--provider", "replay", "--replay", session_id]
    # As recorded: turn 1 in its own process, stopped by --max-steps 4 (the model kept calling
    # read_file), turn 2 continuing the session.
    first = subprocess.run(
        [*replay, "--max-steps", "4", prompts[0]],
        env=env, cwd=workspace, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert first.returncode == 3 and "stopped after 4 steps" in first.stderr  # a limit
    replayed_id = run_session_id(first.stderr)
    second = subprocess.run(
        [*replay, "--session", replayed_id, prompts[1]],
        env=env, cwd=workspace, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    replayed = events_of(home / "sessions" / replayed_id / "session.jsonl")

    def conversation(events: list[dict[str, Any]]) -> list[Any]:
        """What was said and done; the model source is the replay's own (``replay``)."""
        kinds = ("assistant/message", "tool/call", "tool/result")
        picked = [
            (e["type"], json.loads(json.dumps(e["data"]))) for e in events if e["type"] in kinds
        ]
        for kind, data in picked:
            if kind == "assistant/message":
                data["message"].pop("source")
        return picked

    assert conversation(replayed) == conversation(with_repeat_notes(recorded))
    assert second.stdout.splitlines()[0] == "5"  # what the 0.5B model said 2 + 2 is


def test_the_recorded_loop_replayed_now_stops_at_the_fifth_identical_read(tmp_path):
    """The real model's turn, replayed with the default limit: its first reply reads the file
    once, its second asks for the same read eight times; the fifth identical result ends the
    turn after that step, every result of it logged, with one line saying why."""
    recorded, home, workspace, env = prepared(tmp_path)
    replay = [DSH, "run", "--provider", "replay", "--replay", recorded[0]["id"]]
    first = subprocess.run(
        [*replay, "--max-steps", "4", prompts_of(recorded)[0]],
        env=env, cwd=workspace, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    reason = (
        'the model called read_file {"limit":2000,"offset":1,"path":"notes.txt"} 5 times in this '
        "turn and got the same result each time (tools.max_repeated_calls = 5)"
    )
    assert first.returncode == 3  # stopped at a limit
    replayed_id = run_session_id(first.stderr)
    assert first.stderr.splitlines() == [
        f"session: {replayed_id}",
        f"dsh: warning: turn 1 stopped: {reason}",
    ]
    replayed = events_of(home / "sessions" / replayed_id / "session.jsonl")
    assert [e["data"]["reason"] for e in of_type(replayed, "turn/end")] == [
        {"kind": "repeated-calls", "error": reason}  # recorded as "aborted" by an older dsh
    ]
    assert len(of_type(replayed, "step/end")) == 2
    results = of_type(replayed, "tool/result")
    texts = [r["data"]["message"]["content"][0]["content"][0]["text"] for r in results]
    assert len(texts) == 9 and len(of_type(replayed, "tool/call")) == 9
    assert ["Same call and same result" in t for t in texts] == [False] + [True] * 8
