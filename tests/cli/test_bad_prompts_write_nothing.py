"""A prompt that is not UTF-8 (a PROMPT argument, stdin, --prompts-file), or a blank PROMPT
argument, is refused with one line before anything is written: no half-logged turn in a resumed
session, no empty new one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import DSH
from tests.helpers import run_session_id


def dsh(*args: str | bytes, env, cwd, stdin: bytes = b""):
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, input=stdin, capture_output=True, timeout=60
    )


def event_types(session_id: str, *, env, cwd) -> list[str]:
    out = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=cwd).stdout
    return [json.loads(line)["type"] for line in out.decode().splitlines()]


def session_ids(env, cwd) -> list[str]:
    out = dsh("sessions", "list", "--all", env=env, cwd=cwd).stdout.decode()
    return [line.split()[0] for line in out.splitlines() if line[:1].isdigit()]


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"text": "first"}, {"text": "second"}]))
    return path


def test_a_non_utf8_prompt_argument_leaves_a_resumed_session_untouched(tmp_path, env, script):
    first = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    session_id = run_session_id(first.stderr)
    before = event_types(session_id, env=env, cwd=tmp_path)

    bad = dsh("run", "--session", session_id, b"caf\xe9", env=env, cwd=tmp_path)

    assert bad.returncode == 2
    assert bad.stderr.decode().splitlines() == [
        "dsh: error: a PROMPT argument is not UTF-8 text (byte 0xe9 on line 1)"
    ]
    assert event_types(session_id, env=env, cwd=tmp_path) == before


def test_a_non_utf8_prompt_on_stdin_creates_no_session(tmp_path, env, script):
    bad = dsh("run", "--script", str(script), "-", env=env, cwd=tmp_path, stdin=b"ok\n\xff\n")

    assert bad.returncode == 2
    assert b"the prompt read from stdin is not UTF-8 text (byte 0xff on line 2)" in bad.stderr
    assert b"Traceback" not in bad.stderr
    assert session_ids(env, tmp_path) == []


def test_a_non_utf8_prompts_file_is_one_line_and_creates_no_session(tmp_path, env, script):
    prompts = tmp_path / "prompts.txt"
    prompts.write_bytes(b"one\ntwo \x80\n")

    bad = dsh("run", "--script", str(script), "--prompts-file", str(prompts), env=env, cwd=tmp_path)

    assert bad.returncode == 2
    assert bad.stderr.decode().splitlines() == [
        f"dsh: error: --prompts-file {prompts} is not UTF-8 text (byte 0x80 on line 2)"
    ]
    assert session_ids(env, tmp_path) == []


@pytest.mark.parametrize("blank", ["", "  \n"])
def test_a_blank_prompt_argument_is_refused_like_an_empty_stdin(tmp_path, env, script, blank):
    bad = dsh("run", "--script", str(script), "first", blank, env=env, cwd=tmp_path)

    assert bad.returncode == 2
    assert bad.stderr.decode().splitlines() == [
        "dsh: error: a PROMPT argument is empty; give the prompt text"
    ]
    assert session_ids(env, tmp_path) == []
