"""``dsh run`` against a real HTTP stand-in server on 127.0.0.1 (``FakeServer``, answering as a
llama.cpp server started with ``-c 8192``): a prompt the window cannot hold is refused at
start, in one line, with a non-zero exit and nothing sent or logged; a prompt that fits but
overflows the server is kept whole through overflow recovery (docs/usage.md, "Prompts and the
context window"; docs/compaction.md, "The prompt a turn answers")."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import run_session_id
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import (
    FakeServer,
    json_error,
    json_ok,
    oa_chunk,
    oa_tool_call,
    openai_stream,
    openai_text,
)

DSH = str(Path(sys.executable).with_name("dsh"))
PASTE = "".join(f"line {n}: héllo wörld {'x' * 100}\n" for n in range(1000))  # ~120 KB


def dsh(tmp_path: Path, url: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env |= {"DSH_HOME": str(tmp_path / "home"), "DSH_COMPACTION_SUMMARIZER": "extractive"}
    command = [DSH, "run", "--base-url", url, "--model", "m", *args]
    return subprocess.run(
        command, env=env, cwd=tmp_path, input=stdin, capture_output=True, text=True, timeout=120
    )


def _llama(server: FakeServer) -> str:  # noqa: F811
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 8192}})
    return server.url + "/v1"


def _logs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "home").rglob("session.jsonl"))


def test_a_paste_the_window_cannot_hold_is_refused_at_start(tmp_path, server: FakeServer):  # noqa: F811
    result = dsh(tmp_path, _llama(server), "-", stdin=PASTE)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "dsh: error: the prompt is ~31k tokens; the 8,192-token context window leaves ~4.8k "
        "for it beside the system prompt, tools and reply: shorten it or attach the file with "
        "@path"
    ]
    assert server.requests == []  # nothing went to the model
    assert _logs(tmp_path) == []  # and no session of nothing was kept


def test_a_refused_prompt_among_several_runs_none_and_leaves_a_resumed_session_as_it_was(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    url = _llama(server)
    server.queue(openai_text("first answer"))
    first = dsh(tmp_path, url, "hello")
    assert first.returncode == 0, first.stderr
    session_id = run_session_id(first.stderr)
    (log,) = _logs(tmp_path)
    before = log.read_bytes()
    again = dsh(tmp_path, url, "--session", session_id, "a short one", "-", stdin=PASTE)
    assert again.returncode == 2
    assert again.stderr.startswith("dsh: error: the prompt is ~31k tokens")
    assert len(server.requests) == 1  # the first run's call only: the short prompt did not run
    assert log.read_bytes() == before


def test_a_short_prompt_whose_mention_attaches_too_much_is_refused_at_start(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """A 6,000-token reply bound leaves an 8k window ~600 tokens for the prompt: the words of
    ``summarise @big.log`` fit, the ~2k-token note its mention attaches does not. Refused
    before the first turn, with the other prompts; without the mention the same words go."""
    (tmp_path / "big.log").write_text("".join(f"row {n}: {'v' * 60}\n" for n in range(400)))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("[provider]\nmax_output_tokens = 6000\n")
    url = _llama(server)
    result = dsh(tmp_path, url, "hello", "summarise @big.log")
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()  # the room left depends on the system prompt's
    assert re.fullmatch(  # environment section (the platform, the date): about 600
        r"dsh: error: the prompt and what it attaches \(@big\.log ~2\.2k\) are ~2\.2k tokens; "
        r"the 8,192-token context window leaves ~\d{3} for them beside the system prompt, "
        r"tools and reply: shorten it or mention fewer or smaller files",
        line,
    ), line
    assert server.requests == [] and _logs(tmp_path) == []
    server.queue(openai_text("it has rows"))
    fine = dsh(tmp_path, url, "summarise big.log")
    assert fine.returncode == 0, fine.stderr


def test_a_later_prompt_is_checked_again_with_its_files_as_its_turn_finds_them(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """The first turn writes big.log, which the second prompt mentions: checked at start it
    attached nothing; at its turn it attaches the file and is refused there, exit 2, the first
    turn kept."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("[provider]\nmax_output_tokens = 6000\n")
    url = _llama(server)
    rows = "".join(f"row {n}: {'v' * 60}\n" for n in range(400))
    write = json.dumps({"path": "big.log", "content": rows})
    call = oa_tool_call(0, id="c1", name="write_file", arguments=write)
    server.queue(
        openai_stream(oa_chunk(tool_calls=[call]), oa_chunk(finish="tool_calls")),
        openai_text("written"),
    )
    result = dsh(tmp_path, url, "--yes", "write big.log", "summarise @big.log")
    assert result.returncode == 2, result.stderr
    assert (tmp_path / "big.log").read_text() == rows
    assert result.stderr.splitlines()[-1].startswith(
        "dsh: error: the prompt and what it attaches (@big.log ~2.2k)"
    )
    assert len(server.requests) == 2  # the first turn's two calls; none for the second
    (log,) = _logs(tmp_path)
    logged = [json.loads(line.split(b"\t")[0]) for line in log.read_bytes().splitlines()[1:]]
    prompts = [e["data"]["content"][0]["text"] for e in logged if e["type"] == "user/message"]
    assert prompts == ["write big.log"]


def test_a_prompt_that_overflows_the_server_is_kept_whole_through_recovery(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """The server counts more tokens than dsh's estimate (text that is not English) and
    refuses the request; recovery compacts the earlier turns, never the prompt, and the retried
    request carries it verbatim as its last message."""
    url = _llama(server)
    server.queue(openai_text("noted"), openai_text("noted again"))
    first = dsh(tmp_path, url, "remember ZEBRA-7731 " + "please " * 300, "and this " * 300)
    assert first.returncode == 0, first.stderr
    session_id = run_session_id(first.stderr)
    overflow = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
        }
    }
    server.queue(json_error(400, overflow), openai_text("ANSWERED"))
    prompt = "review: " + "ünïcödé " * 1500
    again = dsh(tmp_path, url, "--session", session_id, "--json", "-", stdin=prompt)
    assert again.returncode == 0, again.stderr
    refused, retried = server.bodies[-2:]
    assert retried["messages"][-1] == {"role": "user", "content": prompt.strip()}
    first_prompt = "remember ZEBRA-7731 " + "please " * 300
    assert first_prompt.strip() in json.dumps(refused)
    assert first_prompt.strip() not in json.dumps(retried)  # compacted: a checkpoint instead
    events = [json.loads(line) for line in again.stdout.splitlines()]
    shadowed = {
        seq
        for e in events
        if e["type"] == "compaction/summary"
        for seq in e["data"]["shadowedSeqs"]
    }
    (asked,) = [
        e["seq"]
        for e in events
        if e["type"] == "user/message" and e["data"]["content"][0]["text"] == prompt.strip()
    ]
    assert shadowed and asked not in shadowed


def test_a_refused_prompt_under_a_new_window_flag_leaves_the_session_s_settings_as_they_were(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """The flag would move the session to a 4,096-token window, where the prompt does not fit:
    refused, the session keeps its recorded 8,192 (the next run without the flag is not
    refused)."""
    url = _llama(server)
    server.queue(openai_text("first answer"))
    first = dsh(tmp_path, url, "hello")
    session_id = run_session_id(first.stderr)
    (log,) = _logs(tmp_path)
    before = log.read_bytes()
    prompt = "word " * 2400  # ~3k tokens: room in 8,192, none in 4,096
    again = dsh(tmp_path, url, "--session", session_id, "--context-window", "4096", prompt)
    assert again.returncode == 2
    assert again.stderr.splitlines()[-1].startswith(
        "dsh: error: the prompt is ~3k tokens; the 4,096"
    )
    assert log.read_bytes() == before
    server.queue(openai_text("second answer"))
    third = dsh(tmp_path, url, "--session", session_id, prompt)
    assert third.returncode == 0, third.stderr


def test_json_output_names_no_session_when_its_prompt_is_refused(tmp_path, server: FakeServer):  # noqa: F811
    result = dsh(tmp_path, _llama(server), "--json", "-", stdin=PASTE)
    assert result.returncode == 2
    assert result.stdout == ""  # no session line for a session that is not kept
    assert _logs(tmp_path) == []


def test_every_face_s_help_gives_the_window_s_real_lower_bound():
    """``--context-window``'s help said "at least 1024" after the bound became 4,096; it gives
    the upper bound too (``MAX_CONTEXT_WINDOW``)."""
    from dsh.config import MAX_CONTEXT_WINDOW, MIN_CONTEXT_WINDOW

    for face in ([], ["run"], ["web"]):
        result = subprocess.run(
            [DSH, *face, "--help"], capture_output=True, text=True, timeout=60, check=True
        )
        shown = " ".join(result.stdout.split())
        bounds = f"tokens, {MIN_CONTEXT_WINDOW} to {MAX_CONTEXT_WINDOW}, checked"
        assert bounds in shown, face


def test_the_flags_change_is_said_only_when_a_run_logs_it(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """``--context-window 4096`` on a session recorded in 8,192 with a prompt it cannot hold:
    refused, nothing logged, so nothing changed and no "the flags change its recorded
    settings" line (it was printed before the refusal); with a prompt that fits, the line
    comes once, as the change is logged."""
    url = _llama(server)
    server.queue(openai_text("first answer"))
    first = dsh(tmp_path, url, "hello")
    session_id = run_session_id(first.stderr)
    prompt = "word " * 2400  # ~3k tokens: room in 8,192, none in 4,096
    refused = dsh(tmp_path, url, "--session", session_id, "--context-window", "4096", prompt)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [refused.stderr.splitlines()[-1]]  # the error alone
    assert refused.stderr.startswith("dsh: error: the prompt is ~3k tokens; the 4,096")
    server.queue(openai_text("second answer"))
    fits = dsh(tmp_path, url, "--session", session_id, "--context-window", "4096", "--json", "hi")
    assert fits.returncode == 0, fits.stderr
    assert fits.stderr.splitlines() == [
        f"dsh: warning: session {session_id}: the flags change its recorded settings: "
        "provider.context_window 8192 -> 4096; with them: compaction.chunk_tokens 1024 -> 512; "
        "compaction.stub_tokens 81 -> 40; compaction.state_max_tokens 409 -> 204"
    ]
    events = [json.loads(line) for line in fits.stdout.splitlines()]
    (recorded,) = [e["data"] for e in events if e["type"] == "session/settings"]
    assert recorded["contextWindow"] == 4096 and "provider.context_window" in recorded["changed"]
