"""Security and data safety through the real ``dsh`` command: keys stay out of the log, a
repository cannot approve itself, a resumed session keeps its workspace, broken logs are listed
and can be salvaged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_session_id

DSH = str(Path(sys.executable).with_name("dsh"))
KEY = "sk-test-0123456789abcdefghij"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(tmp_path / "home")
    environ["OPENAI_API_KEY"] = KEY
    return environ


def dsh(*args: str, env: dict[str, str], cwd: Path, check: bool = True) -> Any:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, check=check, timeout=60
    )


def bash_script(path: Path, *steps: str | None) -> Path:
    """A scripted model: each string is one bash call, each None a final answer (a script
    continues across processes, so it covers every turn of the test)."""
    entries: list[dict[str, Any]] = [
        {"text": "done"}
        if command is None
        else {"toolCalls": [{"name": "bash", "arguments": {"command": command}}]}
        for command in steps
    ]
    path.write_text(json.dumps(entries))
    return path


def session_id(result: Any) -> str:
    return str(run_session_id(result.stderr))


def log_of(env: dict[str, str], sid: str) -> str:
    return (Path(env["DSH_HOME"]) / "sessions" / sid / "session.jsonl").read_text()


def tool_results(env: dict[str, str], sid: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in log_of(env, sid).splitlines()[1:]]
    return [e["data"] for e in events if e["type"] == "tool/result"]


def test_env_run_by_the_model_leaves_no_api_key_in_the_log(tmp_path: Path, env) -> None:
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
    script = bash_script(tmp_path / "s.json", "env", "cat .env", None)
    result = dsh("run", "--script", str(script), "--yes", "show env", env=env, cwd=tmp_path)
    sid = session_id(result)
    log = log_of(env, sid)
    assert (
        KEY not in log
        and "OPENAI_API_KEY="
        not in tool_results(env, sid)[0]["message"]["content"][0]["content"][0]["text"]
    )
    assert "[masked OPENAI_API_KEY]" in log  # the .env file's copy was masked, not dropped
    exported = dsh("sessions", "export", sid, "--format", "md", env=env, cwd=tmp_path).stdout
    assert KEY not in exported


def _outputs(env: dict[str, str], sid: str) -> list[str]:
    return [r["message"]["content"][0]["content"][0]["text"] for r in tool_results(env, sid)]


@pytest.mark.parametrize(
    "setting", ["DSH_PROVIDER_API_KEY_ENV", "DSH_COMPACTION_SUMMARIZER_API_KEY_ENV"]
)
def test_a_variable_named_as_holding_a_key_is_kept_from_commands_and_masked(
    tmp_path: Path, env, setting: str
) -> None:
    """``MY_SERVER_CRED`` matches no secret pattern: only being named as a key's variable keeps
    it out of the bash tool's environment and masks its value (here read from a file)."""
    value = "cred-0123456789abcdef"
    (tmp_path / "cred.txt").write_text(f"token: {value}\n")
    env = {**env, "MY_SERVER_CRED": value}
    unnamed = dsh(
        "run", "--script", str(bash_script(tmp_path / "a.json", "env", None)), "--yes", "show",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert f"MY_SERVER_CRED={value}" in _outputs(env, session_id(unnamed))[0]  # the control
    script = bash_script(tmp_path / "b.json", "env", "cat cred.txt", None)
    named_env = {**env, setting: "MY_SERVER_CRED"}
    named = dsh("run", "--script", str(script), "--yes", "show", env=named_env, cwd=tmp_path)
    sid = session_id(named)
    listed, read = _outputs(env, sid)
    assert "MY_SERVER_CRED=" not in listed and value not in listed and "PATH=" in listed
    assert read.strip() == "token: [masked MY_SERVER_CRED]"
    assert value not in log_of(env, sid)


def test_a_repository_config_cannot_approve_its_own_shell_commands(tmp_path: Path, env) -> None:
    repo = tmp_path / "repo"
    (repo / ".dsh").mkdir(parents=True)
    (repo / ".dsh" / "config.toml").write_text('[tools]\napproval = "auto"\n')
    script = bash_script(tmp_path / "s.json", "touch pwned", None, "touch pwned", None)
    result = dsh("run", "--script", str(script), "go", env=env, cwd=repo)
    assert "ignored tools.approval" in result.stderr and "dsh trust" in result.stderr
    assert result.stderr.count("ignored tools.approval") == 1  # said once, not per config read
    assert not (repo / "pwned").exists()
    assert tool_results(env, session_id(result))[0]["error"]["code"] == "DENIED"
    listed = dsh("sessions", "list", env=env, cwd=repo).stderr
    assert f"workspace {repo}: its .dsh/config.toml is not trusted" in listed

    trusted = dsh("trust", env=env, cwd=repo)
    assert f"{repo}: trusted" in trusted.stdout
    assert dsh("trust", "--list", env=env, cwd=tmp_path).stdout.strip() == f"{repo}  (current)"
    again = dsh("run", "--script", str(script), "go", env=env, cwd=repo)
    assert (repo / "pwned").exists() and "ignored" not in again.stderr
    assert "[trusted]" in dsh("sessions", "list", "--all", env=env, cwd=tmp_path).stdout
    assert "no longer trusted" in dsh("trust", "--remove", env=env, cwd=repo).stdout


def test_a_resumed_session_runs_tools_in_its_own_workspace_unless_cwd_says_so(
    tmp_path: Path, env
) -> None:
    home_ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    home_ws.mkdir()
    elsewhere.mkdir()
    script = bash_script(tmp_path / "s.json", *["pwd", None] * 3)
    sid = session_id(dsh("run", "--script", str(script), "--yes", "one", env=env, cwd=home_ws))
    dsh("run", "--script", str(script), "--yes", "--session", sid, "two", env=env, cwd=elsewhere)
    outputs = [
        r["message"]["content"][0]["content"][0]["text"].strip() for r in tool_results(env, sid)
    ]
    assert outputs == [str(home_ws), str(home_ws)]
    assert "session/workspace" not in log_of(env, sid)

    moved = dsh(
        "run", "--script", str(script), "--yes", "--session", sid, "--cwd", str(elsewhere),
        "three", env=env, cwd=home_ws,
    )  # fmt: skip
    assert f"its tools now run in {elsewhere}" in moved.stderr
    outputs = [
        r["message"]["content"][0]["content"][0]["text"].strip() for r in tool_results(env, sid)
    ]
    assert outputs[-1] == str(elsewhere)
    marks = [json.loads(x) for x in log_of(env, sid).splitlines()[1:]]
    moves = [e["data"] for e in marks if e["type"] == "session/workspace"]
    assert moves == [{"cwd": str(elsewhere), "recorded": str(home_ws)}]


def _corrupt_line(env: dict[str, str], sid: str, index: int) -> Path:
    path = Path(env["DSH_HOME"]) / "sessions" / sid / "session.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[index] = b'{"type": "turn/start", "seq": oops'
    path.write_bytes(b"\n".join(lines))
    return path


def test_an_unreadable_session_is_listed_with_its_reason(tmp_path: Path, env) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    sid = session_id(dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path))
    _corrupt_line(env, sid, 0)
    listed = dsh("sessions", "list", env=env, cwd=tmp_path).stdout
    assert f"{sid}  UNREADABLE: line 1: not a valid session header" in listed
    shown = dsh("sessions", "show", sid, env=env, cwd=tmp_path, check=False)
    assert shown.returncode == 1 and "no session" not in shown.stderr
    assert "line 1" in shown.stderr


def test_repair_salvages_a_log_corrupt_in_the_middle(tmp_path: Path, env) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": f"answer {i}"} for i in range(3)]))
    sid = session_id(dsh("run", "--script", str(script), "a", "b", "c", env=env, cwd=tmp_path))
    original = (Path(env["DSH_HOME"]) / "sessions" / sid / "session.jsonl").read_bytes()
    total = original.count(b"\n")
    path = _corrupt_line(env, sid, 8)  # line 9
    corrupted = path.read_bytes()
    export = dsh("sessions", "export", sid, "--format", "md", env=env, cwd=tmp_path, check=False)
    assert export.returncode == 1 and "line 9" in export.stderr

    report = dsh("sessions", "repair", sid, env=env, cwd=tmp_path).stdout.splitlines()
    copies = sorted(path.parent.glob("session.jsonl.before-repair-*"))
    assert len(copies) == 1 and copies[0].read_bytes() == corrupted
    assert report[0] == f"session {sid}: copied the original to {copies[0]}"
    assert report[1] == "kept lines 1-8 (the header and 7 events, seq 0-6)"
    assert report[2].startswith(f"dropped lines 9-{total} ({total - 8} lines, ")
    assert "bytes); first bad line 9: not valid JSON" in report[2]  # the place named once
    assert path.read_bytes() == b"".join(original.splitlines(keepends=True)[:8])
    shown = dsh("sessions", "export", sid, "--format", "md", env=env, cwd=tmp_path)
    assert "answer 0" in shown.stdout
    # the salvaged session is writable again: the open turn is closed by crash repair
    resumed = dsh("run", "--script", str(script), "--session", sid, "d", env=env, cwd=tmp_path)
    assert "closed turn left open" in resumed.stderr
    again = dsh("sessions", "repair", sid, env=env, cwd=tmp_path).stdout
    assert "nothing to repair" in again


def test_repair_drops_a_zero_filled_tail_after_power_loss(tmp_path: Path, env) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "one"}, {"text": "two"}]))
    sid = session_id(dsh("run", "--script", str(script), "a", "b", env=env, cwd=tmp_path))
    path = Path(env["DSH_HOME"]) / "sessions" / sid / "session.jsonl"
    good = path.read_bytes()
    lines = good.splitlines(keepends=True)
    # the last two lines' blocks never reached the disk: the size did, as zeros
    zeroed = b"".join(lines[:-2]) + b"\x00" * (len(lines[-2]) + len(lines[-1]) - 1) + b"\n"
    path.write_bytes(zeroed)
    refused = dsh("sessions", "show", sid, env=env, cwd=tmp_path, check=False)
    assert refused.returncode == 1
    report = dsh("sessions", "repair", sid, env=env, cwd=tmp_path).stdout
    assert (
        f"dropped a zero-filled tail of {len(zeroed) - len(b''.join(lines[:-2]))} bytes" in report
    )
    assert path.read_bytes() == b"".join(lines[:-2])
    assert dsh("sessions", "show", sid, env=env, cwd=tmp_path).returncode == 0


def test_the_console_script_says_a_config_warning_once_but_every_other_warning_each_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import logging

    from dsh.cli.main import ConsoleScript

    root = logging.getLogger("dsh")
    handlers, level, propagate = list(root.handlers), root.level, root.propagate
    try:
        ConsoleScript().start()
        for _ in range(2):
            logging.getLogger("dsh.config").warning("ignored tools.approval")
            logging.getLogger("dsh.agent").warning("a pre-step hook failed")
    finally:
        root.handlers, root.level, root.propagate = handlers, level, propagate
    err = capsys.readouterr().err
    assert err.count("ignored tools.approval") == 1
    assert err.count("a pre-step hook failed") == 2
