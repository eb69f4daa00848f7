"""A turn recorded from a real model whose replies were cut at the output-token limit with tool
calls in them, replayed keylessly through ``dsh run``.

Qwen2.5-Coder 0.5B on llama.cpp ``llama-server`` (``-c 4096 --jinja``), run with
``provider.max_output_tokens`` 57: three copies of ``echo x >> log.txt`` written as text. Its
first reply (a fenced call) ran; its next two repeated the call three times until the limit cut
each right after the third, so the calls were recovered from text, answered ``NOT_RUN`` and not
run, and the second cut ended the turn ``max-tokens``. The recorded workspace path was renamed
to a neutral one (each line sealed again); nothing else was changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from dsh.llm.types import CUT_REPLY
from tests.helpers import run_session_id

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sessions" / "real-qwen2.5-coder-0.5b-cut.jsonl"
DSH = str(Path(sys.executable).with_name("dsh"))
MAX_OUTPUT = "57"


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def result_texts(events: list[dict[str, Any]]) -> list[str]:
    return [
        "".join(b["text"] for part in r["data"]["message"]["content"] for b in part["content"])
        for r in of_type(events, "tool/result")
    ]


def test_the_recording_shows_the_real_model_cut_twice_with_text_calls():
    events = events_of(FIXTURE)
    header = of_type(events, "request/header")[0]["data"]["header"]
    assert header["config"]["params"]["max_tokens"] == int(MAX_OUTPUT)
    usages = [m["data"]["usage"]["outputTokens"] for m in of_type(events, "assistant/message")]
    assert usages[1:] == [57, 57]  # the second and third replies used the whole limit
    calls = of_type(events, "tool/call")
    assert [c["data"]["step"] for c in calls] == [1, 2, 2, 2, 3, 3, 3]
    assert all(c["data"]["fromText"] for c in calls)
    texts = result_texts(events)
    assert CUT_REPLY not in texts[0]  # the uncut first call ran
    assert all(t.startswith("[NOT_RUN]") and CUT_REPLY in t for t in texts[1:])
    (end,) = of_type(events, "turn/end")
    assert end["data"]["reason"]["kind"] == "max-tokens"
    assert "provider.max_output_tokens" in end["data"]["reason"]["error"]


def test_a_keyless_replay_runs_only_the_uncut_call(tmp_path):
    recorded = events_of(FIXTURE)
    session_id = recorded[0]["id"]
    home = tmp_path / "home"
    (home / "sessions" / session_id).mkdir(parents=True)
    shutil.copyfile(FIXTURE, home / "sessions" / session_id / "session.jsonl")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (prompt,) = [
        "".join(b["text"] for b in e["data"]["content"] if b["type"] == "text")
        for e in of_type(recorded, "user/message")
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(home)
    env["DSH_PROVIDER_TEXT_TOOL_CALLS"] = "true"  # on by default only for openai-compatible
    done = subprocess.run(
        [DSH, "run", "--provider", "replay", "--replay", session_id, "--yes", "--max-steps", "5",
         prompt],
        env=env, cwd=workspace, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr  # cut at the output limit
    assert (workspace / "log.txt").read_text() == "x\n"  # one line: none of the 6 cut calls ran
    (warning,) = [x for x in done.stderr.splitlines() if "turn 1 stopped" in x]
    assert "twice in a row" in warning and "provider.max_output_tokens" in warning
    replayed_id = run_session_id(done.stderr)
    replayed = events_of(home / "sessions" / replayed_id / "session.jsonl")
    assert result_texts(replayed)[1:] == result_texts(recorded)[1:]  # the same NOT_RUN answers
    assert [e["data"] for e in of_type(replayed, "tool/call")] == [
        e["data"] for e in of_type(recorded, "tool/call")
    ]
    (end,) = of_type(replayed, "turn/end")
    assert end["data"]["reason"]["kind"] == "max-tokens"
    # the replay's own requests carry no bound; the error names the recorded one, as live
    (recorded_end,) = of_type(recorded, "turn/end")
    assert end["data"]["reason"] == recorded_end["data"]["reason"]
    assert "(57 tokens)" in warning
