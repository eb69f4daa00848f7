"""Git as dsh runs it on its own (``/diff``, the hooks check, the bench's version line) gets the
tools' scrubbed environment narrowed to what git reads: no provider key, no web token, no
secret-named variable, nothing unrelated. Seen from inside: a ``git`` first on ``PATH`` writes
the environment it was given, then runs the real git."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh.agent.workspace_diff import workspace_diff
from dsh.bench.suite import versions
from dsh.tools.git_hooks import git_layout, hooks_dir
from dsh.tools.own_git import git_environment

REAL_GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(REAL_GIT is None, reason="needs git")

PLANTED = {
    "FAKE_API_KEY": "sk-planted-0123456789",
    "DEEPSEEK_API_KEY": "sk-deepseek-0123456789",
    "DSH_WEB_TOKEN": "tok-planted-0123456789",
    "UNRELATED_SETTING": "not-for-git",
}


@pytest.fixture
def seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[dict[str, str]]]:
    """Plants ``PLANTED`` and a recording ``git``; returns the environments git ran with."""
    record = tmp_path / "git-environments"
    record.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'env -0 > "$(mktemp {record}/env.XXXXXX)"\n'
        f'exec {REAL_GIT} "$@"\n'
    )  # fmt: skip
    wrapper.chmod(0o755)
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))

    def environments() -> list[dict[str, str]]:
        found = []
        for file in sorted(record.iterdir()):
            pairs = (item.partition("=") for item in file.read_text().split("\0") if item)
            found.append({name: value for name, _, value in pairs})
        return found

    return environments


def repo_with_change(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "f.txt").write_text("a\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "first"]):
        subprocess.run(
            [REAL_GIT or "git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e",
             *args],
            check=True, capture_output=True,
        )  # fmt: skip
    (repo / "f.txt").write_text("a\nb\n")
    return repo


@pytest.mark.parametrize(
    "run",
    [
        pytest.param(lambda repo: workspace_diff(repo), id="workspace_diff"),
        pytest.param(lambda repo: hooks_dir(repo), id="hooks_dir"),
        pytest.param(lambda repo: git_layout(repo), id="git_layout"),
        pytest.param(lambda repo: versions(), id="bench-versions"),
    ],
)
def test_no_secret_and_nothing_unrelated_reaches_git(
    tmp_path: Path, seen: Callable[[], list[dict[str, str]]], run: Callable[[Path], object]
) -> None:
    repo = repo_with_change(tmp_path)

    run(repo)

    environments = seen()
    assert environments  # git ran, and through the recording wrapper
    for env in environments:
        assert not set(PLANTED) & set(env), sorted(set(PLANTED) & set(env))
        assert not any(value in env.values() for value in PLANTED.values())
        assert env["PATH"] == os.environ["PATH"] and env["HOME"] == os.environ["HOME"]
        assert env["GIT_CONFIG_GLOBAL"] == os.devnull  # the user's own git settings kept
        assert env["GIT_ALLOW_PROTOCOL"] == ""  # no transport: nothing fetched


def test_the_settings_follow_the_users_own_and_a_secret_named_git_variable_is_scrubbed() -> None:
    env = git_environment(
        {
            "PATH": "/bin",
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "color.ui",
            "GIT_CONFIG_VALUE_0": "never",
            "GIT_TOKEN": "ghp_0123456789",
            "OPENAI_API_KEY": "sk-0123456789",
        },
        [("filter.a=b.clean", "")],
    )
    assert "GIT_TOKEN" not in env and "OPENAI_API_KEY" not in env
    count = int(env["GIT_CONFIG_COUNT"])
    settings = [(env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"]) for n in range(count)]
    assert settings == [
        ("color.ui", "never"),
        ("core.fsmonitor", "false"),
        ("diff.external", ""),
        ("core.pager", "cat"),
        ("filter.a=b.clean", ""),
    ]
