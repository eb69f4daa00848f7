"""``dsh run "… @path …"`` as a real process: the file is attached after the prompt (the
transcript shows it as dsh's own note), unless ``tools.attach_mentions`` is off."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_run_cli import dsh, env, write_script
from tests.helpers import run_session_id

__all__ = ["env"]  # the fixture, shared with dsh run's tests


def run_and_show(tmp_path: Path, env) -> str:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("the answer is 42\n")
    script = write_script(tmp_path / "s.json", [{"text": "It says 42."}])
    done = dsh("run", "--script", str(script), "what does @a.txt say?", env=env, cwd=workspace)
    session_id = run_session_id(done.stderr)
    return dsh("sessions", "show", session_id, env=env, cwd=workspace).stdout


def test_run_attaches_a_mentioned_file_and_the_transcript_shows_it(tmp_path, env):
    shown = run_and_show(tmp_path, env)
    assert "what does @a.txt say?" in shown
    assert "Context from attach: [attached] The user attached a.txt" in shown
    assert "1\tthe answer is 42" in shown


def test_attach_mentions_off_in_the_config_sends_the_prompt_alone(tmp_path, env):
    Path(env["DSH_HOME"]).mkdir(parents=True, exist_ok=True)
    (Path(env["DSH_HOME"]) / "config.toml").write_text("[tools]\nattach_mentions = false\n")
    shown = run_and_show(tmp_path, env)
    assert "what does @a.txt say?" in shown
    assert "Context from attach" not in shown and "the answer is 42" not in shown
