"""Around the programs git's config names (``tests/tools/test_protected_git_programs.py``): a word
of a program setting that names no file protects none (``--timeout 3600``, ``git lfs
filter-process``), a bare command name is a workspace file only through a relative ``PATH``
entry; and what routes files through a driver git runs (a ``.gitattributes``, the file
``core.attributesFile`` names) or puts hooks into the repositories git makes
(``init.templateDir``) is protected as the programs are. Real repositories, the real git: each
attack is shown to run when the user writes the same file (the control)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext
from dsh.tools.git_programs import named_programs
from tests.tools.test_approval import ScriptedApprover
from tests.tools.test_protected_git_programs import _own_git, git, why  # noqa: F401
from tests.tools.test_protected_paths import HEADLESS_POLICIES, run_call

ROUTED = "changes which files git runs through the programs its config names"


def test_a_word_that_names_no_file_protects_none(workspace: Path) -> None:
    """An option's value, a subcommand, a label: none is a file git runs, and a file of that
    name written in the workspace is an ordinary file (each of these used to be asked for)."""
    git(workspace, "init", "-q")
    git(workspace, "config", "core.pager", "less -R")
    git(workspace, "config", "credential.helper", "cache --timeout 3600")
    git(workspace, "config", "filter.lfs.process", "git-lfs filter-process")
    git(workspace, "config", "merge.x.driver", "git merge-file -L ours %A %O %B")
    git(workspace, "config", "diff.external", "difft --color always")
    for name in ("less", "-R", "3600", "filter-process", "merge-file", "ours", "always"):
        assert why(workspace, name) is None, name


def test_a_bare_argument_names_a_file_that_is_there_or_one_named_like_a_file(
    workspace: Path,
) -> None:
    """``python3 conv.py``: ``conv.py`` is the script git's textconv runs, there or not yet (a
    write would create it); ``cat notes``, when ``notes`` is there, the file it reads."""
    git(workspace, "init", "-q")
    git(workspace, "config", "diff.x.textconv", "python3 conv.py")
    git(workspace, "config", "diff.y.textconv", "sh notes")
    assert why(workspace, "conv.py") is not None
    assert why(workspace, "notes") is None  # not there: a bare word, not a file's name
    (workspace / "notes").write_text("echo hi\n")
    said = why(workspace, "notes")
    assert said is not None and "(diff.y.textconv)" in said


def test_a_command_name_is_a_workspace_file_through_a_relative_path_entry(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``core.fsmonitor = mymon`` runs ``mymon`` from ``PATH``: an ordinary file of the
    workspace while ``PATH`` holds absolute directories only; ``bin/mymon`` once it holds
    ``bin`` (git runs it from the top level: shown by the real git)."""
    git(workspace, "init", "-q")
    git(workspace, "config", "core.fsmonitor", "mymon")
    assert named_programs([("core.fsmonitor", "mymon")], [workspace], "/usr/bin:/bin") == ()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert why(workspace, "bin/mymon") is None and why(workspace, "mymon") is None
    monkeypatch.setenv("PATH", f"bin{os.pathsep}/usr/bin:/bin")
    said = why(workspace, "bin/mymon")
    assert said is not None and "(core.fsmonitor)" in said
    marker = tmp_path / "RAN"
    (workspace / "bin").mkdir()
    (workspace / "bin" / "mymon").write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    (workspace / "bin" / "mymon").chmod(0o755)
    (workspace / "sub").mkdir()
    git(workspace / "sub", "status")  # run in a subdirectory: the top level's bin/ counts
    assert marker.exists()
    empty = named_programs([("core.pager", "pg")], [workspace], f"/usr/bin{os.pathsep}")
    assert [p.path for p in empty] == [(workspace / "pg").resolve()]  # an empty entry is .


def runs_textconv(workspace: Path, marker: Path) -> None:
    """A repository whose config has a driver that runs what it is given (``textconv = sh``)
    for ``*.run`` files, and a committed ``notes.txt``."""
    git(workspace, "init", "-q")
    git(workspace, "config", "diff.run.textconv", "sh")
    (workspace / ".gitattributes").write_text("*.run diff=run\n")
    (workspace / "notes.txt").write_text("echo notes\n")
    git(workspace, "add", ".")
    git(workspace, "commit", "-q", "-m", "start")
    (workspace / "notes.txt").write_text(f"touch {marker}\n")  # the model's, harmless as text


@pytest.mark.parametrize("policy", HEADLESS_POLICIES.values(), ids=HEADLESS_POLICIES.keys())
def test_gitattributes_is_refused_headless_while_a_driver_is_configured(
    workspace: Path, ctx: ToolContext, tmp_path: Path, policy: object
) -> None:
    """``*.txt diff=run`` would feed the model's ``notes.txt`` to ``sh`` on the user's next
    ``git diff``: refused, nothing runs; the same line written by the user runs it."""
    marker = tmp_path / "TEXTCONV_RAN"
    runs_textconv(workspace, marker)
    attack = "*.run diff=run\n*.txt diff=run\n"
    args = {"path": ".gitattributes", "content": attack}
    out = run_call(ctx, "write_file", args, policy())  # type: ignore[operator]
    assert out.code == "DENIED", out.text
    assert f"writing .gitattributes {ROUTED} (diff.run.textconv)" in out.text
    git(workspace, "diff")
    assert not marker.exists()
    (workspace / ".gitattributes").write_text(attack)
    git(workspace, "diff")
    assert marker.exists()


def test_gitattributes_is_asked_under_auto_and_every_attributes_file_counts(
    workspace: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    """``dsh --yes`` in the UI: asked, with the reason, each time; a ``.gitattributes`` in a
    subdirectory and the file ``core.attributesFile`` names count too, an ordinary file does
    not."""
    runs_textconv(workspace, tmp_path / "RAN")
    git(workspace, "config", "core.attributesFile", "team.attributes")
    approver = ScriptedApprover("once", "once", "deny")
    policy = ApprovalPolicy("auto", approver=approver)
    for path in (".gitattributes", "docs/.gitattributes", "team.attributes"):
        run_call(ctx, "write_file", {"path": path, "content": "*.md text\n"}, policy)
    assert not run_call(ctx, "write_file", {"path": "a.md", "content": ""}, policy).is_error
    assert approver.protected == [
        f"writing {path} {ROUTED} (diff.run.textconv), on your next git command"
        for path in (".gitattributes", "docs/.gitattributes", "team.attributes")
    ]
    assert (workspace / "docs" / ".gitattributes").exists()
    assert not (workspace / "team.attributes").exists()  # denied


def test_gitattributes_is_an_ordinary_file_when_no_driver_runs_a_program(
    workspace: Path,
) -> None:
    """Without a driver, attributes choose only git's own behaviour (line endings, a built-in
    diff's hunk headers): nothing to ask."""
    git(workspace, "init", "-q")
    git(workspace, "config", "diff.python.xfuncname", "^def .*")  # no program: not a driver
    assert why(workspace, ".gitattributes") is None


@pytest.mark.parametrize("policy", HEADLESS_POLICIES.values(), ids=HEADLESS_POLICIES.keys())
def test_the_template_directory_is_refused_headless_and_a_clone_runs_its_hook(
    workspace: Path,
    ctx: ToolContext,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    policy: object,
) -> None:
    """``init.templateDir`` naming a directory of the workspace (the user's config, a
    workspace that is their home): a ``hooks/post-checkout`` there runs in the next clone.
    Refused; the same hook written by the user runs."""
    user_config = tmp_path / "user.gitconfig"
    user_config.write_text(f"[init]\n\ttemplateDir = {workspace / 'templates'}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user_config))
    git(workspace, "init", "-q")
    git(workspace, "commit", "-q", "--allow-empty", "-m", "start")
    marker = tmp_path / "CLONE_RAN"
    hook = f"#!/bin/sh\ntouch {marker}\n"
    args = {"path": "templates/hooks/post-checkout", "content": hook}
    out = run_call(ctx, "write_file", args, policy())  # type: ignore[operator]
    assert out.code == "DENIED", out.text
    assert "git's template directory" in out.text
    git(tmp_path, "clone", "-q", str(workspace), "first")
    assert not marker.exists()
    written = workspace / "templates" / "hooks" / "post-checkout"
    written.parent.mkdir(parents=True)
    written.write_text(hook)
    written.chmod(0o755)
    git(tmp_path, "clone", "-q", str(workspace), "second")
    assert marker.exists()
