"""A ``dsh compact`` killed after its pass logged the plan: the pass is finished from the plan by
the next process that compacts the session (or runs a step), and the ``/compact`` that ran it is
answered then, once (docs/compaction.md, "Failure handling").

Each process is the real ``dsh compact`` (its CLI entry point, the recallable backend and the
keyless ``extractive`` summariser), killed with SIGKILL right before a chosen append reaches the
log, so it dies exactly where meant: between two regions' commits, after the last commit and
before the answer, or in the middle of the later process that finishes the pass; and a
``/compact`` whose process died before its pass began, or after its pass failed, is answered when
the session is opened again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.compaction.commands import FINISHED_ANOTHERS
from dsh.store import JsonlStore
from dsh.store.pass_repair import COMPACT_NEVER_RAN
from dsh.surface import Session
from tests.helpers import append_tool_turn
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_error

KILLED_DSH = """
import os, signal, sys
from dsh.surface import Session
kind, _, nth = os.environ["KILL_BEFORE"].partition(":")
seen = [0]
append = Session.append
def dying_append(self, payload, *args, **kwargs):
    if type(payload).__name__ == kind:
        seen[0] += 1
        if seen[0] == int(nth):
            os.kill(os.getpid(), signal.SIGKILL)
    return append(self, payload, *args, **kwargs)
Session.append = dying_append
from dsh.cli.main import main
sys.argv = ["dsh", *sys.argv[1:]]
main()
"""
FINISHED = "finished from its plan after the session was reopened"


def _home(
    tmp_path: Path, *, summarizer: str = "extractive", base_url: str = "http://127.0.0.1:9"
) -> tuple[JsonlStore, str]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f"""
[provider]
name = "openai-compatible"
model = "big-model"
base_url = "{base_url}/v1"
context_window = 16000

[compaction]
backend = "recallable"
summarizer = "{summarizer}"
retain_tokens = 200
"""
    )
    store = JsonlStore(home)
    with Session.create(store, cwd=str(tmp_path)) as session:
        for i in range(12):
            append_tool_turn(session, f"q{i}", calls=[("read_file", "{}", f"output {i} " * 200)])
    return store, session.id


def _dsh_compact(
    store: JsonlStore, session_id: str, kill_before: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(store.home)
    if kill_before is None:
        command = [str(Path(sys.executable).with_name("dsh")), "compact", session_id]
    else:
        env["KILL_BEFORE"] = kill_before
        command = [sys.executable, "-c", KILLED_DSH, "compact", session_id]
    child = subprocess.run(
        command, env=env, cwd=store.home, capture_output=True, text=True, timeout=120
    )
    if kill_before is not None:
        assert child.returncode == -signal.SIGKILL, child.stderr
    else:
        assert child.returncode == 0, child.stderr
    return child


def _events(store: JsonlStore, session_id: str) -> list[dict[str, Any]]:
    lines = store.log_path(session_id).read_text().splitlines()[1:]
    return [json.loads(line) for line in lines]


def _answers(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Every ``/compact``'s ``command/done`` payloads, by command id, in log order."""
    runs = [e["data"]["commandId"] for e in events if e["type"] == "command/run"]
    done = [e["data"] for e in events if e["type"] == "command/done"]
    return {run: [d for d in done if d["commandId"] == run] for run in runs}


def _first_command(events: list[dict[str, Any]]) -> str:
    return next(e["data"]["commandId"] for e in events if e["type"] == "command/run")


@pytest.mark.parametrize(
    "kill_before",
    [
        "CompactionSummary:2",  # between the first region's commit and the second's
        "CompactionSummary:1",  # right after the plan, before any commit
        "CommandDone:1",  # after the last commit, before the answer
    ],
)
def test_a_compact_killed_after_its_plan_is_answered_once_its_pass_is_finished(
    tmp_path: Path, kill_before: str
):
    store, session_id = _home(tmp_path)
    _dsh_compact(store, session_id, kill_before)
    killed = _events(store, session_id)
    first = _first_command(killed)
    assert "compaction/plan" in [e["type"] for e in killed]
    assert _answers(killed)[first] == []  # what the faces showed as never answered

    later = _dsh_compact(store, session_id)
    events = _events(store, session_id)
    (answer,) = _answers(events)[first]
    assert answer["ok"] is True
    assert answer["text"].startswith("Compacted ") and FINISHED in answer["text"]
    plan = next(e for e in events if e["type"] == "compaction/plan")
    summaries = [
        e
        for e in events
        if e["type"] == "compaction/summary" and e["data"]["passId"] == plan["data"]["passId"]
    ]
    assert len(summaries) == len(plan["data"]["regions"])  # the whole plan landed
    assert answer["sourceEventSeq"] == summaries[-1]["seq"]  # the pass's state, as live
    items = sum(len(s["data"]["shadowedSeqs"]) for s in summaries)
    assert answer["text"].startswith(f"Compacted {items} history items")
    assert all(len(done) == 1 for done in _answers(events).values())
    if kill_before != "CommandDone:1":  # this call committed the rest of that pass
        assert later.stdout.strip() == FINISHED_ANOTHERS

    for _ in range(2):  # reopened and compacted again: answered once, still
        _dsh_compact(store, session_id)
        again = _answers(_events(store, session_id))
        assert again[first] == [answer]
        assert all(len(done) == 1 for done in again.values())


def test_a_compact_killed_again_while_its_pass_is_finished_is_answered_by_the_next(
    tmp_path: Path,
):
    """The second process dies while it commits that pass's third region from the plan: the
    next one still finishes the plan (the open start the second left is not taken for a pass
    of its own, closed as failed, which abandoned the plan), and the second's own ``/compact``,
    which never began a pass, is answered as such when the session is opened again."""
    store, session_id = _home(tmp_path)
    _dsh_compact(store, session_id, "CompactionSummary:2")
    first = _first_command(_events(store, session_id))
    _dsh_compact(store, session_id, "CompactionSummary:2")  # one more region, then dead
    second = [e for e in _events(store, session_id) if e["type"] == "command/run"][-1]
    assert _answers(_events(store, session_id))[first] == []

    later = _dsh_compact(store, session_id)
    assert "did not run: the process ended before its pass began" in later.stderr
    events = _events(store, session_id)
    answers = _answers(events)
    (answer,) = answers[first]
    assert answer["ok"] is True and FINISHED in answer["text"]
    assert answers[second["data"]["commandId"]] == [
        {"commandId": second["data"]["commandId"], "ok": False, "text": COMPACT_NEVER_RAN}
    ]
    assert all(len(done) == 1 for done in answers.values())
    plan = next(e for e in events if e["type"] == "compaction/plan")["data"]
    pass_id = plan["passId"]
    brackets = [
        e["data"]["compactionId"]
        for e in events
        if e["type"] == "compaction/start" and e["data"]["passId"] == pass_id
    ]
    # the dead resume's start is left alone (not closed as failed), and not reused
    assert brackets == [f"{pass_id}-{n}" for n in ("1", "2", "2r", "3r", "3r2", "4r")]
    ended = {e["data"]["compactionId"]: e["data"] for e in events if e["type"] == "compaction/end"}
    assert f"{pass_id}-3r" not in ended
    assert all("error" not in end for end in ended.values())
    landed = [e for e in events if e["type"] == "compaction/summary"]
    assert len(landed) == len(plan["regions"])


def test_a_compact_killed_after_its_pass_failed_is_answered_with_the_failure(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
):
    """Killed between the failed pass's ``compaction/end`` and its answer: the next open
    answers the ``/compact`` with what the pass's end says."""
    server.fixed["/v1/chat/completions"] = json_error(500, {"error": {"message": "no summary"}})
    store, session_id = _home(tmp_path, summarizer="summary-model", base_url=server.url)
    _dsh_compact(store, session_id, "CommandDone:1")
    events = _events(store, session_id)
    assert [e["data"].get("error", "") for e in events if e["type"] == "compaction/end"] == [
        "summary failed: UNAVAILABLE: no summary"
    ]
    first = _first_command(events)
    assert _answers(events)[first] == []
    Session.open(store, session_id, writable=True).close()
    Session.open(store, session_id, writable=True).close()
    assert _answers(_events(store, session_id))[first] == [
        {
            "commandId": first,
            "ok": False,
            "text": "Compaction pass did not finish: summary failed: UNAVAILABLE: no summary",
        }
    ]
