"""A reopened session's recorded settings are checked like fresh input: a value an older dsh
recorded that is no longer valid (a summariser's window under 1,024 tokens, the conversation's
under 4,096) is replaced by the configured one, said in one warning line, and the log is only
appended to. Driven through the real ``dsh`` console script on a real session file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from dsh.agent import session_settings
from dsh.config import Settings
from dsh.events import RequestContext, RequestContextEvent, SessionSettingsEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import run_session_id

DSH = str(Path(sys.executable).with_name("dsh"))
WARNING = "recorded settings that are no longer valid"


def dsh(tmp_path: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [DSH, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == code, result.stderr
    return result


def answers(tmp_path: Path, count: int) -> str:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps([{"text": f"answer {i}"} for i in range(count)]))
    return str(path)


def recorded_by_an_older_dsh(
    tmp_path: Path, window: int = 512, summarizer_window: int | None = 512
) -> tuple[str, Path]:
    """A session run once, then recorded with the windows a server reported before dsh had a
    lower bound (512 tokens, the budgets scaled to it): its id and its log file."""
    first = dsh(tmp_path, "run", "--script", answers(tmp_path, 1), "hello")
    sid = run_session_id(first.stderr)
    home = tmp_path / "home"
    with Session.open(JsonlStore(home), sid, writable=True) as session:
        current = session_settings.latest(session)
        assert current is not None
        old = session_settings.snapshot(
            Settings(),
            current.provider,
            current.model,
            window,
            current.workspace,
            summarizer_window=summarizer_window,
        )
        session.append(msgspec.structs.replace(old, changed=("provider.context_window",)))
    (log,) = (home / "sessions").glob(f"{sid}/session.jsonl")
    return sid, log


def configure(tmp_path: Path) -> None:
    (tmp_path / "home" / "config.toml").write_text(
        "[provider]\ncontext_window = 20000\n[compaction]\nsummarizer_context_window = 8192\n"
    )


def events(tmp_path: Path, sid: str) -> list[Any]:
    with Session.open(JsonlStore(tmp_path / "home"), sid) as session:
        return list(session.events)


def test_dsh_run_session_replaces_a_recorded_window_under_the_bound_and_says_it_once(
    tmp_path: Path,
):
    sid, log = recorded_by_an_older_dsh(tmp_path)
    configure(tmp_path)
    before = log.read_bytes()
    reopened = dsh(tmp_path, "run", "--script", answers(tmp_path, 2), "--session", sid, "again")
    warned = [line for line in reopened.stderr.splitlines() if WARNING in line]
    assert len(warned) == 1, reopened.stderr
    (line,) = warned
    assert line.startswith(f"dsh: warning: session {sid} ")
    assert "provider.context_window 512 -> 20000 (must be at least 4096)" in line
    assert "compaction.summarizer_context_window 512 -> 8192 (must be at least 1024)" in line
    assert "compaction.chunk_tokens 100 -> (unset) (scaled to that window)" in line
    # the log was only appended to: the old record is still there, byte for byte
    assert log.read_bytes().startswith(before)
    logged = events(tmp_path, sid)
    settings = [e.data for e in logged if isinstance(e, SessionSettingsEvent)]
    assert settings[1].context_window == 512  # the older record, kept
    now = settings[-1]
    assert (now.context_window, now.compaction.summarizer_context_window) == (20000, 8192)
    assert now.compaction.chunk_tokens == 2500  # scaled to the window it runs in now
    assert {"provider.context_window", "compaction.summarizer_context_window"} <= set(now.changed)
    windows = [e.data.context_window for e in logged if isinstance(e, RequestContextEvent)]
    assert windows[-1] == 20000  # the turn after the reopen ran in the configured window
    # the settings it runs with are recorded now: the next reopen has nothing to say
    again = dsh(tmp_path, "run", "--script", answers(tmp_path, 3), "--session", sid, "more")
    assert WARNING not in again.stderr


def test_a_recorded_window_under_the_raised_bound_is_replaced_on_reopen(tmp_path: Path):
    """2,048 tokens was valid before the bound became 4,096 (a window in which dsh's own system
    prompt and tools leave no room under the threshold): a reopen runs in the configured one."""
    sid, _ = recorded_by_an_older_dsh(tmp_path, 2048, None)
    configure(tmp_path)
    reopened = dsh(tmp_path, "run", "--script", answers(tmp_path, 2), "--session", sid, "again")
    (line,) = [line for line in reopened.stderr.splitlines() if WARNING in line]
    assert "provider.context_window 2048 -> 20000 (must be at least 4096)" in line
    logged = events(tmp_path, sid)
    windows = [e.data.context_window for e in logged if isinstance(e, RequestContextEvent)]
    assert windows[-1] == 20000


def test_dsh_compact_replaces_it_too_and_a_pass_with_nothing_to_do_leaves_the_log_as_it_was(
    tmp_path: Path,
):
    sid, log = recorded_by_an_older_dsh(tmp_path)
    configure(tmp_path)
    before = log.read_bytes()
    compacted = dsh(tmp_path, "compact", sid)
    warned = [line for line in compacted.stderr.splitlines() if WARNING in line]
    assert len(warned) == 1 and "provider.context_window 512 -> 20000" in warned[0]
    assert log.read_bytes() == before


def test_a_context_window_flag_under_the_bound_is_refused_in_one_line(tmp_path: Path):
    """2,048 tokens: dsh's own system prompt and tools (~1.7k) would leave a conversation no
    room under the compaction threshold (``dsh.agent.room``)."""
    refused = dsh(
        tmp_path, "run", "--script", answers(tmp_path, 1), "--context-window", "2048", "hi",
        code=2,
    )  # fmt: skip
    assert refused.stderr == (
        "dsh: error: config key provider.context_window must be at least 4096 "
        "(set in command line)\n"
    )
    assert not (tmp_path / "home" / "sessions").exists() or not any(
        (tmp_path / "home" / "sessions").iterdir()
    )


def test_dsh_compact_of_a_log_older_than_recorded_settings_drops_a_logged_window_under_the_bound(
    tmp_path: Path,
):
    """A log written before settings were recorded compacts in the window it last ran in (its
    ``request/context``); one under the bound gives way to the configured window, said once."""
    home = tmp_path / "home"
    with Session.create(JsonlStore(home), cwd=str(tmp_path)) as session:
        session.append(RequestContext(provider="scripted", model="m", context_window=600))
        sid = session.id
    configure(tmp_path)
    (log,) = (home / "sessions").glob(f"{sid}/session.jsonl")
    before = log.read_bytes()
    compacted = dsh(tmp_path, "compact", sid)
    warned = [line for line in compacted.stderr.splitlines() if WARNING in line]
    assert warned == [
        f"dsh: warning: session {sid} {WARNING}; using the configured ones instead: "
        "provider.context_window 600 -> 20000 (must be at least 4096)"
    ]
    assert log.read_bytes() == before
