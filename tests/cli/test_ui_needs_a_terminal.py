"""``dsh`` (the terminal UI), ``dsh --resume`` and ``dsh demo --tui`` without a terminal: one
line saying so, exit 2, nothing drawn and nothing logged, instead of a UI that waits for keys
that never come (or a traceback when stdin is closed). The real console script, as a
subprocess; the UI reads keys from stdin and draws on stderr."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

from tests.cli.conftest import DSH
from tests.helpers import run_session_id

REFUSED = "dsh: error: the terminal UI reads keys from stdin, which is not a terminal; "


def test_dsh_with_stdin_not_a_terminal_refuses_the_ui_in_one_line(tmp_path, env):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}]))

    done = subprocess.run(
        [DSH, "--script", str(script)],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(REFUSED) and done.stderr.count("\n") == 1
    assert "`dsh run PROMPT`" in done.stderr
    assert not (Path(env["DSH_HOME"]) / "sessions").exists()


def test_dsh_with_stdin_closed_refuses_the_ui_without_a_traceback(tmp_path, env):
    done = subprocess.run(
        ["sh", "-c", f'exec "{DSH}" <&-'],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 2
    assert done.stderr.startswith(REFUSED) and done.stderr.count("\n") == 1


def test_resume_without_a_terminal_refuses_after_checking_the_id(tmp_path, env):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    ran = subprocess.run(
        [DSH, "run", "--script", str(script), "hello"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    session_id = run_session_id(ran.stderr)
    log = Path(env["DSH_HOME"]) / "sessions" / session_id / "session.jsonl"
    before = log.read_bytes()

    def resume(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [DSH, "--resume", *args],
            env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip

    unknown = resume("nope")
    assert unknown.returncode == 1 and unknown.stderr.startswith("dsh: error: no session 'nope'")
    moved = resume(session_id, "--cwd", str(tmp_path))
    assert moved.returncode == 2 and moved.stderr.startswith(REFUSED)
    assert log.read_bytes() == before  # the --cwd move was not logged for a UI that never ran


def test_demo_tui_without_a_terminal_refuses_before_making_its_project(tmp_path, env):
    temporary = tmp_path / "tmp"
    temporary.mkdir()

    done = subprocess.run(
        [DSH, "demo", "--tui"],
        env={**env, "TMPDIR": str(temporary)},
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 2 and done.stderr.startswith(REFUSED)
    assert list(temporary.iterdir()) == []  # no throwaway dsh-demo-* project left behind


def test_dsh_with_stderr_not_a_terminal_refuses_the_ui_it_would_draw_there(tmp_path, env):
    master, slave = pty.openpty()
    try:
        done = subprocess.run(
            [DSH],
            env=env,
            cwd=tmp_path,
            stdin=slave,
            stdout=slave,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(slave)
        os.close(master)

    assert done.returncode == 2
    assert done.stderr.startswith(
        "dsh: error: the terminal UI draws on stderr, which is not a terminal; "
    )
    assert done.stderr.count("\n") == 1
