"""``tools.allow_commands`` and ``tools.deny_commands`` across the config layers: a project's
rules add to the user's; an untrusted project may add deny rules but no allow rule; a bad
pattern is refused in one line naming the key and where it was set."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dsh.config import load_settings, set_trust
from dsh.errors import ConfigError
from tests.test_config_trust import env_for, project

USER = '[tools]\nallow_commands = ["git status", "pytest *"]\ndeny_commands = ["git push *"]\n'


def test_an_untrusted_project_may_add_deny_rules_but_no_allow_rule(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = project(
        tmp_path,
        '[tools]\nallow_commands = ["pytest *", "curl *"]\n'
        'deny_commands = ["rm *", "git push *"]\n',
    )
    with caplog.at_level(logging.WARNING, logger="dsh"):
        settings = load_settings(environ=env_for(tmp_path, USER), cwd=repo)
    assert settings.tools.allow_commands == ["git status", "pytest *"]  # the user's alone
    assert settings.tools.deny_commands == ["git push *", "rm *"]  # joined, none twice
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        f"{repo / '.dsh' / 'config.toml'}: ignored tools.allow_commands = "
        '["pytest *", "curl *"]: a project may not let commands run unasked; review that file '
        "first: if you want it to apply, run `dsh trust` in that directory"
    ]


def test_an_untrusted_project_may_repeat_the_users_allow_rules(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = project(tmp_path, '[tools]\nallow_commands = ["pytest *"]\n')
    with caplog.at_level(logging.WARNING, logger="dsh"):
        settings = load_settings(environ=env_for(tmp_path, USER), cwd=repo)
    assert settings.tools.allow_commands == ["git status", "pytest *"]
    assert caplog.records == []


def test_a_trusted_project_adds_its_allow_rules_to_the_users(tmp_path: Path) -> None:
    repo = project(tmp_path, '[tools]\nallow_commands = ["make test"]\ndeny_commands = ["rm *"]\n')
    env = env_for(tmp_path, USER)
    set_trust(repo, True, env)
    settings = load_settings(environ=env, cwd=repo)
    assert settings.tools.allow_commands == ["git status", "pytest *", "make test"]
    assert settings.tools.deny_commands == ["git push *", "rm *"]
    (repo / ".dsh" / "config.toml").write_text('[tools]\nallow_commands = ["curl *"]\n')
    edited = load_settings(environ=env, cwd=repo)  # changed since trusted: untrusted again
    assert edited.tools.allow_commands == ["git status", "pytest *"]


def test_a_bad_pattern_in_the_user_config_is_one_line_naming_key_and_file(tmp_path: Path) -> None:
    env = env_for(tmp_path, '[tools]\ndeny_commands = ["git push *", "rm -rf / ; x"]\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(environ=env, cwd=tmp_path)
    assert str(caught.value) == (
        "config key tools.deny_commands has 'rm -rf / ; x': a pattern is one command's words, "
        f"without `;` (set in {tmp_path / 'home' / 'config.toml'})"
    )


def test_a_bad_pattern_in_an_untrusted_project_ignores_that_file_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = project(tmp_path, '[tools]\ndeny_commands = ["git * push"]\napproval = "read-only"\n')
    with caplog.at_level(logging.WARNING, logger="dsh"):
        settings = load_settings(environ=env_for(tmp_path, USER), cwd=repo)
    assert settings.tools.deny_commands == ["git push *"] and settings.tools.approval == "ask"
    (line,) = [r.getMessage() for r in caplog.records]
    assert "ignored this untrusted project config" in line and "tools.deny_commands" in line


def test_the_environment_gives_rules_as_comma_separated_patterns(tmp_path: Path) -> None:
    env = {**env_for(tmp_path), "DSH_TOOLS_ALLOW_COMMANDS": "git status, pytest *"}
    assert load_settings(environ=env, cwd=tmp_path).tools.allow_commands == [
        "git status",
        "pytest *",
    ]
