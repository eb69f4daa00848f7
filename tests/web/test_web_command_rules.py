"""``tools.allow_commands`` and ``tools.deny_commands`` decide the bash calls of ``dsh web``'s
agents as ``dsh run``'s (one policy, ``dsh.agent.runtime.approval_policy``): a listed command
runs with no approval put to the page; a denied one is refused even under ``--yes``.

Real processes: ``dsh web`` with the keyless scripted provider."""

from __future__ import annotations

from pathlib import Path

from tests.web.real_command import dsh_web_process
from tests.web.test_web_approval_flags import bash_script, new_session, tool_results
from tests.web.test_web_provider_flags import events_of, prompt_and_wait


def user_config(tmp_path: Path, toml: str) -> None:
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(toml)


def test_an_allowed_command_runs_with_no_approval_asked_of_the_page(tmp_path: Path) -> None:
    user_config(tmp_path, '[tools]\nallow_commands = ["echo ran-unasked"]\n')
    with dsh_web_process(tmp_path, ("--script", str(bash_script(tmp_path)))) as web:
        session_id = new_session(web, tmp_path)
        info = prompt_and_wait(web, session_id, "run it")
    assert info["approvals"] == []
    [result] = tool_results(events_of(tmp_path / "home", session_id))
    assert result.strip() == "ran-unasked"


def test_a_denied_command_is_refused_under_yes(tmp_path: Path) -> None:
    user_config(tmp_path, '[tools]\ndeny_commands = ["echo *"]\n')
    with dsh_web_process(tmp_path, ("--script", str(bash_script(tmp_path)), "--yes")) as web:
        session_id = new_session(web, tmp_path)
        info = prompt_and_wait(web, session_id, "run it")
    assert info["approvals"] == []
    [result] = tool_results(events_of(tmp_path / "home", session_id))
    assert result.startswith("bash was not run: the command matches the rule 'echo *'")
