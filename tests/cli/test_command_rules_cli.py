"""Command rules in a real ``dsh run``: a command ``tools.allow_commands`` lists runs without
``--yes`` or ``--allow bash`` (nothing else does); one ``tools.deny_commands`` lists is refused
even under ``--yes``, naming the rule; a project's allow rules apply only once trusted."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_run_cli import dsh, write_script

CALLS = [
    {
        "toolCalls": [
            {"name": "bash", "arguments": {"command": "touch allowed.txt"}},
            {"name": "bash", "arguments": {"command": "touch allowed.txt; touch chained.txt"}},
            {"name": "bash", "arguments": {"command": "touch other.txt"}},
        ]
    },
    {"text": "done"},
]


def user_config(env: dict[str, str], toml: str) -> None:
    home = Path(env["DSH_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(toml)


def ran(workspace: Path) -> list[str]:
    return sorted(p.name for p in workspace.glob("*.txt"))


def test_an_allowed_command_runs_unasked_without_any_flag(tmp_path, env):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    user_config(env, '[tools]\nallow_commands = ["touch allowed.txt"]\n')
    script = write_script(tmp_path / "s.json", CALLS)
    result = dsh("run", "--script", str(script), "go", env=env, cwd=workspace)
    assert ran(workspace) == ["allowed.txt"]  # the chained one and the other were refused
    assert result.stderr.count("denied by approval policy 'ask' in a headless run") == 2


def test_a_denied_command_is_refused_under_yes_naming_the_rule(tmp_path, env):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    user_config(env, '[tools]\ndeny_commands = ["touch other.txt", "rm *"]\n')
    script = write_script(tmp_path / "s.json", CALLS)
    result = dsh("run", "--script", str(script), "--yes", "go", env=env, cwd=workspace)
    assert ran(workspace) == ["allowed.txt", "chained.txt"]
    assert (
        "dsh: bash was not run: the command matches the rule 'touch other.txt' in "
        "tools.deny_commands, which refuses it in every approval mode. The user can remove the "
        "rule to permit it.\n"
    ) in result.stderr


def test_a_projects_allow_rule_applies_only_once_the_directory_is_trusted(tmp_path, env):
    workspace = tmp_path / "ws"
    (workspace / ".dsh").mkdir(parents=True)
    (workspace / ".dsh" / "config.toml").write_text(
        '[tools]\nallow_commands = ["touch allowed.txt"]\n'
    )
    script = write_script(tmp_path / "s.json", CALLS)
    untrusted = dsh("run", "--script", str(script), "go", env=env, cwd=workspace)
    assert ran(workspace) == []
    assert "ignored tools.allow_commands" in untrusted.stderr
    dsh("trust", env=env, cwd=workspace)
    dsh("run", "--script", str(script), "go", env=env, cwd=workspace)
    assert ran(workspace) == ["allowed.txt"]
