"""Git LFS and the protection of the attributes (``dsh.tools.git_attributes``): a driver counts
by the program it runs, not by the config that defines it. What ``git lfs install`` writes
(``--skip-smudge``'s and ``--local``'s too) runs git-lfs, which stores and fetches what it is
given and runs none of it: with that alone, a ``.gitattributes`` is an ordinary file, even
headless. A command that only looks like it, an LFS extension, any other driver (the user's
own ``~/.gitconfig``'s too) and a ``PATH`` with a relative directory, where ``git-lfs`` could
be the workspace's, keep it protected; the files git-lfs's own settings name as programs (an
extension's, a custom transfer agent) are protected as git's programs are. Real repositories
and the real git's config listing."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.tools.base import ToolContext
from tests.tools.test_protected_git_programs import _own_git, git, why  # noqa: F401
from tests.tools.test_protected_paths import HEADLESS_POLICIES, run_call

INSTALL = {
    "clean": "git-lfs clean -- %f",
    "smudge": "git-lfs smudge -- %f",
    "process": "git-lfs filter-process",
    "required": "true",
}
"""What ``git lfs install`` writes under ``[filter "lfs"]``."""
SKIP_SMUDGE = {**INSTALL, "smudge": "git-lfs smudge --skip -- %f",
               "process": "git-lfs filter-process --skip"}  # fmt: skip
"""What ``git lfs install --skip-smudge`` writes."""
TRACK = "*.psd filter=lfs diff=lfs merge=lfs -text\n"
"""The line ``git lfs track "*.psd"`` adds."""
ROUTED = "changes which files git runs through the programs its config names"


def users_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    """``text`` as the user's own ``~/.gitconfig`` (``GIT_CONFIG_GLOBAL``)."""
    path = tmp_path / "user.gitconfig"
    path.write_text(text)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(path))
    return path


def lfs_section(settings: dict[str, str]) -> str:
    return '[filter "lfs"]\n' + "".join(f"\t{k} = {v}\n" for k, v in settings.items())


@pytest.mark.parametrize("install", [INSTALL, SKIP_SMUDGE], ids=["install", "skip-smudge"])
@pytest.mark.parametrize("where", ["global", "local"])
def test_git_lfs_alone_leaves_gitattributes_an_ordinary_file(
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    install: dict[str, str],
    where: str,
) -> None:
    """``git lfs install`` (in ``~/.gitconfig``) or ``git lfs install --local`` (in
    ``.git/config``): no approval for ``.gitattributes``; a driver that runs what it is given,
    defined beside it in the user's own config, is asked for, named alone."""
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    git(workspace, "init", "-q")
    users = users_config(tmp_path, monkeypatch, lfs_section(install) if where == "global" else "")
    if where == "local":
        for key, value in install.items():
            git(workspace, "config", f"filter.lfs.{key}", value)
    assert "filter.lfs.clean" in git(workspace, "config", "--list").stdout
    assert why(workspace, ".gitattributes") is None
    assert why(workspace, "docs/.gitattributes") is None
    users.write_text(users.read_text() + '[diff "nb"]\n\ttextconv = sh\n')  # the user's own
    said = why(workspace, ".gitattributes")
    assert said == f"writing .gitattributes {ROUTED} (diff.nb.textconv), on your next git command"


@pytest.mark.parametrize("policy", HEADLESS_POLICIES.values(), ids=HEADLESS_POLICIES.keys())
def test_a_headless_run_edits_gitattributes_with_git_lfs_installed(
    workspace: Path,
    ctx: ToolContext,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    policy: object,
) -> None:
    """``dsh run --allow write`` tracking a file type with LFS, as ``git lfs track`` would:
    written, not refused."""
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    users_config(tmp_path, monkeypatch, lfs_section(INSTALL))
    git(workspace, "init", "-q")
    out = run_call(ctx, "write_file", {"path": ".gitattributes", "content": TRACK}, policy())  # type: ignore[operator]
    assert not out.is_error, out.text
    assert (workspace / ".gitattributes").read_text() == TRACK


LOOKALIKES = [
    ("clean", "git-lfs clean -- %f; sh %f"),
    ("clean", "git-lfs clean -- %f && ./x"),
    ("clean", "sh -c 'git-lfs clean -- %f'"),
    ("clean", "./git-lfs clean -- %f"),
    ("clean", "/tmp/git-lfs clean -- %f"),
    ("clean", "git-lfs smudge -- %f"),  # a known command, in another setting
    ("smudge", "git-lfs clean -- %f"),
    ("process", "git-lfs filter-process --verbose"),
]


def test_what_only_looks_like_git_lfs_extensions_and_a_relative_path_still_count(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that is not word for word what ``git lfs install`` writes is a driver (and
    overrides the real one in the repository's config, as git reads it); an LFS extension
    runs its program on each file git-lfs is given; with a relative ``PATH`` directory,
    ``git-lfs`` may be the workspace's own file."""
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    users_config(tmp_path, monkeypatch, lfs_section(INSTALL))
    git(workspace, "init", "-q")
    assert why(workspace, ".gitattributes") is None
    for name, value in LOOKALIKES:
        git(workspace, "config", f"filter.lfs.{name}", value)
        said = why(workspace, ".gitattributes")
        assert said is not None and f"(filter.lfs.{name})" in said, value
        git(workspace, "config", "--unset", f"filter.lfs.{name}")
    assert why(workspace, ".gitattributes") is None
    git(workspace, "config", "lfs.extension.foo.clean", "./foo-clean %f")
    said = why(workspace, ".gitattributes")
    assert said is not None and "(lfs.extension.foo.clean)" in said
    git(workspace, "config", "--unset", "lfs.extension.foo.clean")
    monkeypatch.setenv("PATH", "bin:/usr/local/bin:/usr/bin:/bin")
    said = why(workspace, ".gitattributes")
    assert said is not None and "(filter.lfs.clean, filter.lfs.smudge, filter.lfs.process)" in said


@pytest.mark.parametrize(
    ("key", "value", "written"),
    [
        ("lfs.extension.foo.clean", "./foo-clean %f", "foo-clean"),
        ("lfs.extension.foo.smudge", "python3 tools/foo.py smudge %f", "tools/foo.py"),
        ("lfs.customtransfer.agent.path", "scripts/transfer-agent", "scripts/transfer-agent"),
    ],
)
def test_the_programs_git_lfs_runs_are_protected_as_git_programs(
    workspace: Path, key: str, value: str, written: str
) -> None:
    """git-lfs, which git runs as a filter (and its hooks on a push), runs an extension's
    program on each file it is given and a custom transfer agent on a push or a fetch:
    writing the file one names runs it, as writing ``core.fsmonitor``'s would."""
    git(workspace, "init", "-q")
    git(workspace, "config", key, value)
    said = why(workspace, written)
    assert said == (
        f"writing {written} changes a program git's config names ({key}), which git runs on "
        "your next git command"
    )
