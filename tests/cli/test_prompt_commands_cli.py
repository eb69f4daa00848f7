"""``dsh run "/NAME ARGS"`` as a real process: a prompt command's text is the turn's prompt;
an unknown name is sent as typed; a file that cannot be a command is one warning line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_run_cli import dsh, env, write_script
from tests.helpers import run_session_id

__all__ = ["env"]  # the fixture, shared with dsh run's tests


def user_prompts(session_id: str, env, cwd: Path) -> list[str]:
    shown = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=cwd)
    prompts = []
    for line in shown.stdout.splitlines():
        event = json.loads(line)
        if event["type"] == "user/message" and event["data"]["source"]["kind"] == "user":
            prompts.append("".join(b["text"] for b in event["data"]["content"]))
    return prompts


def test_run_sends_a_prompt_commands_text_and_an_unknown_name_as_typed(tmp_path, env):
    commands = Path(env["DSH_HOME"]) / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("Review $ARGUMENTS for bugs.\n")
    (commands / "Bad Name.md").write_text("never")
    workspace = tmp_path / "ws"
    (workspace / ".dsh" / "commands").mkdir(parents=True)
    (workspace / ".dsh" / "commands" / "ship.md").write_text("Ship it.")
    script = write_script(tmp_path / "s.json", [{"text": "a"}, {"text": "b"}, {"text": "c"}])
    done = dsh(
        "run",
        "--script",
        str(script),
        "/review src/app.py",
        "/ship today",
        "/nosuch x",
        env=env,
        cwd=workspace,
    )
    session_id = run_session_id(done.stderr)
    assert user_prompts(session_id, env, workspace) == [
        "Review src/app.py for bugs.",
        "Ship it.\n\ntoday",
        "/nosuch x",
    ]
    (warning,) = [line for line in done.stderr.splitlines() if "Bad Name.md" in line]
    assert warning.startswith("dsh: warning: prompt command ")
    assert "skipped: a name is 1 to 40 letters" in warning


def test_init_and_a_namespaced_command_run_headless_and_the_write_needs_approval(tmp_path, env):
    """``/init`` sends dsh's own prompt; the model's write of AGENTS.md is a write like any other:
    denied in a headless run unless allowed. ``/ops:deploy`` is ``ops/deploy.md``."""
    from dsh.agent.init_command import INIT_TEMPLATE

    workspace = tmp_path / "ws"
    (workspace / ".dsh" / "commands" / "ops").mkdir(parents=True)
    (workspace / ".dsh" / "commands" / "ops" / "deploy.md").write_text("Deploy $1 to $2.")
    write = {"name": "write_file", "arguments": {"path": "AGENTS.md", "content": "Run make.\n"}}
    entries = [{"toolCalls": [write]}, {"text": "wrote it"}, {"text": "deployed"}]
    script = write_script(tmp_path / "s.json", entries)

    denied = dsh("run", "--script", str(script), "/init", env=env, cwd=workspace)
    assert not (workspace / "AGENTS.md").exists()
    assert "dsh: write_file was not run: denied by approval policy" in denied.stderr

    done = dsh(
        "run",
        "--script",
        str(script),
        "--allow",
        "write",
        "/init",
        '/ops:deploy web "the staging cluster"',
        env=env,
        cwd=workspace,
    )
    assert (workspace / "AGENTS.md").read_text() == "Run make.\n"
    assert user_prompts(run_session_id(done.stderr), env, workspace) == [
        INIT_TEMPLATE,
        "Deploy web to the staging cluster.",
    ]
