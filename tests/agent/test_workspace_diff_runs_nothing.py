"""``/diff`` runs git without approval, so git must run no program a repository's config names
and see no secret: a filter driver (``clean``, ``process``; any name, in any config file git
reads), a submodule's own config, a partial clone's fetch of a missing object. Each repository
is real, and each test first shows that a plain ``git diff`` does run the planted command (it
writes a marker file), then that ``workspace_diff`` does not, its diff still right."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dsh.agent.workspace_diff import WorkspaceDiffError, workspace_diff

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture(autouse=True)
def _own_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Only the test's config counts: no user or system file, no repository above tmp_path."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e",
         "-c", "protocol.file.allow=always", *args],
        check=True, capture_output=True, text=True,
    )  # fmt: skip


def plain_diff_runs(repo: Path, marker: Path) -> bool:
    """Whether a plain ``git diff HEAD`` (what dsh ran before) runs the planted command."""
    subprocess.run(["git", "-C", str(repo), "diff", "HEAD"], capture_output=True, check=False)
    ran = marker.exists()
    marker.unlink(missing_ok=True)
    return ran


def committed(repo: Path, files: dict[str, str]) -> Path:
    repo.mkdir()
    git(repo, "init", "-q")
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    return repo


@pytest.mark.parametrize("name", ["evil", "Ev=il.x"])  # -c would split this one at its "="
@pytest.mark.parametrize("key", ["clean", "process"])
def test_a_filter_driver_the_repository_config_names_does_not_run(
    tmp_path: Path, name: str, key: str
) -> None:
    marker = tmp_path / "filter-ran"
    repo = committed(
        tmp_path / "repo",
        {"f.txt": "a\n", "plain.txt": "keep\n", ".gitattributes": f"f.txt filter={name}\n"},
    )
    git(repo, "config", f"filter.{name}.{key}", f"sh -c 'env > {marker}; cat' --")
    git(repo, "config", f"filter.{name}.required", "true")
    (repo / "f.txt").write_text("a\nb\n")
    (repo / "plain.txt").write_text("changed\n")
    assert plain_diff_runs(repo, marker)

    diff = workspace_diff(repo)

    assert not marker.exists()
    by_path = {change.path: change.lines for change in diff.files}
    assert set(by_path) == {"f.txt", "plain.txt"}
    assert "+b" in by_path["f.txt"] and " a" in by_path["f.txt"]
    assert "-keep" in by_path["plain.txt"] and "+changed" in by_path["plain.txt"]


def test_a_filter_from_an_included_file_or_the_users_config_does_not_run_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "filter-ran"
    repo = committed(
        tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n", ".gitattributes": "a.txt filter=inc\n"}
    )
    (repo / ".gitattributes").write_text("a.txt filter=inc\nb.txt filter=mine\n")
    git(repo, "commit", "-qam", "attributes")
    included = tmp_path / "team.gitconfig"
    included.write_text(f"[filter \"inc\"]\n\tclean = sh -c 'touch {marker}; cat'\n")
    git(repo, "config", "include.path", str(included))
    user = tmp_path / "user.gitconfig"
    user.write_text(f"[filter \"mine\"]\n\tprocess = sh -c 'touch {marker}'\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user))
    (repo / "a.txt").write_text("a2\n")
    (repo / "b.txt").write_text("b2\n")
    assert plain_diff_runs(repo, marker)

    diff = workspace_diff(repo)

    assert not marker.exists()
    assert [change.path for change in diff.files] == ["a.txt", "b.txt"]


def test_a_submodules_own_filter_does_not_run_and_its_new_commit_still_shows(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "submodule-filter-ran"
    inner = committed(tmp_path / "inner", {"s.txt": "x\n", ".gitattributes": "s.txt filter=sub\n"})
    repo = committed(tmp_path / "repo", {"top.txt": "top\n"})
    git(repo, "submodule", "add", "-q", str(inner), "sm")
    git(repo, "commit", "-qm", "with sm")
    sub = repo / "sm"
    git(sub, "commit", "-q", "--allow-empty", "-m", "moved")  # a new commit: shown
    git(sub, "config", "filter.sub.clean", f"sh -c 'touch {marker}; cat'")
    (sub / "s.txt").write_text("y\n")  # the submodule's own uncommitted change: not looked at
    assert plain_diff_runs(repo, marker)

    diff = workspace_diff(repo)

    assert not marker.exists()
    [change] = diff.files
    assert change.path == "sm"
    moved = git(sub, "rev-parse", "HEAD").stdout.strip()
    assert f"+Subproject commit {moved}" in change.lines


@pytest.mark.parametrize("transport", ["ssh", "upload-pack", "ext"])
def test_a_partial_clones_missing_object_is_not_fetched(tmp_path: Path, transport: str) -> None:
    """A missing object of a partial clone would be fetched from its promisor remote, running
    ``core.sshCommand``, ``remote.origin.uploadpack`` or an ``ext::`` URL's command, even
    with ``protocol.<name>.allow=always`` in the repository's config."""
    marker = tmp_path / "fetch-ran"
    repo = committed(tmp_path / "repo", {"f.txt": "hello\n"})
    blob = git(repo, "rev-parse", "HEAD:f.txt").stdout.strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    command = f"sh -c 'env > {marker}; exit 1' --"
    by_transport = {
        "ssh": {
            "remote.origin.url": "ssh://example.invalid/x", "core.sshCommand": command,
            "protocol.ssh.allow": "always",
        },
        "upload-pack": {
            "remote.origin.url": str(tmp_path), "remote.origin.uploadpack": command,
            "protocol.file.allow": "always",
        },
        "ext": {
            "remote.origin.url": f"ext::sh -c env% >% {marker}", "protocol.ext.allow": "always",
        },
    }  # fmt: skip
    settings = {
        "core.repositoryformatversion": "1",
        "extensions.partialClone": "origin",
        "remote.origin.promisor": "true",
        **by_transport[transport],
    }
    for key, value in settings.items():
        git(repo, "config", key, value)
    (repo / "f.txt").write_text("hello\nmore\n")
    assert plain_diff_runs(repo, marker)

    with pytest.raises(WorkspaceDiffError, match=r"^git diff failed"):
        workspace_diff(repo)

    assert not marker.exists()
