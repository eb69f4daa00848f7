"""Protected paths: where a write by the model's file tools would let it run commands later.

- a ``.dsh`` directory anywhere in the workspace: dsh's own configuration (a trusted
  project's ``config.toml`` may loosen approval and start MCP servers; ``commands/`` holds the
  project's prompt commands);
- a ``.git`` directory (or a worktree's ``.git`` file) anywhere in the workspace: its hooks
  and config run commands on the user's next git operation; and git's configuration by any
  other name, as git reports it at each check (:func:`~dsh.tools.git_hooks.git_layout`): the
  repository's git directory (``--separate-git-dir=gitdata``), every config file git reads or an
  include names (``include.path = ../.gitconfig``), the user's ``~/.gitconfig`` and
  ``~/.config/git/config`` (a workspace that is ``$HOME``); and, without asking git, a
  directory that is a git directory by its contents (a bare ``origin.git``) above the file;
- dsh's home (``$DSH_HOME``), when it lies inside the workspace: the user config, whose
  ``[trust]`` and ``tools.approval`` are the user's alone;
- the git hooks that live outside ``.git``: the directory the repository's ``core.hooksPath``
  names (``.githooks/``, say) when it lies inside the workspace, as git reports it
  (:func:`~dsh.tools.git_hooks.git_layout`, asked at each check); a ``.husky`` directory
  anywhere (husky points ``core.hooksPath`` at ``.husky/_``, whose hooks run
  ``.husky/pre-commit`` and the like); a ``.pre-commit-config.yaml`` anywhere (once
  ``pre-commit install`` is done, its hooks, ``language: system`` ones included, run on the next
  commit); and the file a hook that is a symlink points at. When ``core.hooksPath`` names the
  workspace itself, only the files there that git runs as hooks (``pre-commit``, …) are;
- the files git's config names as programs it runs (:mod:`dsh.tools.git_programs`:
  ``core.fsmonitor = ./x``, ``diff.<driver>.textconv``, ``filter.<driver>.clean``,
  ``alias.<name> = !./x``, …), in any config file git reads, from the same listing; while a
  config defines a driver running a program (``filter.<driver>.clean``, ``diff.<driver>
  .textconv``, ``merge.<driver>.driver``, …), the attributes that route files through it: a
  ``.gitattributes`` anywhere, the file ``core.attributesFile`` names; and the template
  directory ``init.templateDir`` names, whose hooks git copies into every repository it makes
  (:mod:`dsh.tools.git_attributes`);
- editor and shell-environment configuration that runs commands, though no git hook: VS
  Code's ``.vscode/`` and any ``*.code-workspace`` file (tasks run on folder open), the Dev
  Containers configuration (``.devcontainer/``, ``.devcontainer.json``: ``initializeCommand``
  runs on the host), direnv's ``.envrc``, and mise's (``mise.toml``, ``.mise.toml``,
  ``mise.local.toml``, ``mise.<env>.toml``, ``.mise/``, ``.config/mise/``,
  ``mise/config.toml``, rtx's ``.rtx.toml``, and ``.tool-versions``, whose ``path:`` versions
  put a directory on ``PATH``): hooks and ``env`` run on entering the directory;
- the other hook managers' configuration (:mod:`dsh.tools.hook_configs`): lefthook's,
  husky v4's, lint-staged's, simple-git-hooks' and overcommit's files, by name anywhere, and a
  ``package.json`` when the write changes its ``husky``, ``lint-staged`` or
  ``simple-git-hooks`` key (the parsed JSON before and after compared; an ordinary dependency
  edit is not asked).

Permission to write files must not become permission to run commands, so a write there is
never covered by an "always" answer, ``--allow write``, nor approval mode ``auto``/``--yes``:
it is asked every time, and refused where there is no one to ask
(:class:`~dsh.tools.approval.ApprovalPolicy`).

The path is resolved as the file tools resolve it (:func:`~dsh.tools.workspace.
resolve_in_workspace`: ``~`` expanded, relative to the workspace, symlinks followed, ``..``
collapsed), so ``.dsh/../.dsh/config.toml`` and a symlink to it are caught too. The names that
lead to the file count as well as its own (the tools read their configuration by name, through
a symlink too): the path as given (``lefthook.yml``, a symlink to ``configs/hooks.yml``), and a
symlink at the workspace's top level with a protected name that leads to it (so
``configs/hooks.yml`` itself is caught there); a symlink deeper down that leads to a file is
not looked for (it would take a walk of the workspace at each write). Names are
compared case-insensitively, without the invisible characters HFS+ ignores in a name, so
``.DSH`` or ``.g\u200cit`` on a Mac's case-insensitive disk is caught as well. A path the tools
would refuse anyway (outside the workspace, unresolvable) is not protected here: the tool's own
refusal answers that call. A ``write`` tool names the file it writes in its ``path`` argument
(both built-in ones do).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.config import dsh_home
from dsh.errors import ConfigError, ToolError
from dsh.tools.base import Tool
from dsh.tools.git_attributes import ATTRIBUTES_NAME, shown_drivers
from dsh.tools.git_hooks import GitLayout, git_layout, looks_like_git_dir, runs_as_hook
from dsh.tools.hook_configs import (
    MANAGED_NAMES,
    PACKAGE_JSON,
    PACKAGE_KEYS,
    WHAT_MANAGERS_RUN,
    package_key_change,
)
from dsh.tools.workspace import display_path, is_inside, resolve_in_workspace

GIT = "git"
GIT_HOOKS = "git hooks"
GIT_PROGRAM = "git program"
GIT_TEMPLATES = "git templates"
GIT_ATTRIBUTES = "git attributes"
VSCODE = "VS Code"
DEV_CONTAINER = "Dev Containers"
DIRENV = "direnv"
MISE = "mise"
PROTECTED_NAMES: dict[str, str] = {
    ".dsh": "dsh",
    ".git": GIT,
    ".husky": GIT_HOOKS,
    ".pre-commit-config.yaml": GIT_HOOKS,
    ".vscode": VSCODE,
    ".devcontainer": DEV_CONTAINER,
    ".devcontainer.json": DEV_CONTAINER,
    ".envrc": DIRENV,
    ".mise": MISE,
    ".tool-versions": MISE,
    **MANAGED_NAMES,
}
"""A directory (or file) of this name, anywhere in the workspace → whose configuration it is."""
_NAMED_LIKE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r".+\.code-workspace"), VSCODE),
    (re.compile(r"\.?mise(\..+)?\.toml|\.rtx(\..+)?\.toml"), MISE),
)
"""A file named like this, anywhere → whose configuration it is: a VS Code workspace file;
mise's ``mise.toml``, ``.mise.toml``, ``mise.local.toml``, ``mise.<env>.toml`` (and rtx's)."""
_UNDER: dict[tuple[str, str], str] = {(".config", "mise"): MISE}
"""A directory of the second name right in one of the first → whose configuration it holds
(mise's ``.config/mise/``)."""
_MISE_DIR_CONFIG = re.compile(r"config(\..+)?\.toml")
"""mise's ``mise/config.toml`` (``config.local.toml``, ``config.<env>.toml``)."""
WHAT_CHANGES: dict[str, str] = {
    "dsh": "dsh's own configuration, which can run commands",
    GIT: "git's own configuration, which can run commands",
    GIT_HOOKS: "the git hooks, which can run commands",
    GIT_PROGRAM: "a program git's config names, which git runs on your next git command",
    GIT_TEMPLATES: "git's template directory, whose hooks git init and git clone copy into the "
    "repositories they make (a post-checkout hook there runs in the next clone)",
    GIT_ATTRIBUTES: "which files git runs through the programs its config names",
    VSCODE: "VS Code's workspace configuration, whose tasks and settings can run commands when "
    "the folder is opened",
    DEV_CONTAINER: "the dev container's configuration, whose initializeCommand runs on your "
    "machine when the container is built",
    DIRENV: "direnv's configuration, which your shell runs on entering the directory",
    MISE: "mise's configuration, whose hooks, environment and tool paths your shell's mise "
    "applies on entering the directory",
    **WHAT_MANAGERS_RUN,
}
"""An owner → what a write there changes, as the approval prompt's sentence says it."""

_IGNORED_BY_HFS = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points HFS+ leaves out when it compares names (``.g\u200cit`` is ``.git`` there)."""


@dataclass(frozen=True, slots=True)
class ProtectedWrite:
    """A write the model may never make unasked."""

    path: str
    """The file, as the workspace shows it (``.dsh/config.toml``), and the protected name that
    leads to it when that is not its own (``configs/hooks.yml (lefthook.yml leads there)``)."""
    owner: str
    """Whose configuration it is: ``dsh``, ``git``, ``git hooks`` or a hook manager
    (``lefthook``, …): a key of ``WHAT_CHANGES``."""
    key: str | None = None
    """For a package.json: the hook key the write changes (``lint-staged``)."""
    compared: bool = True
    """For a package.json key: False when the file's JSON could not be compared before and
    after (the key is named in its text), so the write may change it."""
    setting: str | None = None
    """For a program git runs: the config key naming it (``core.fsmonitor``)."""

    @property
    def why(self) -> str:
        """The sentence the approval prompt and a denial give."""
        if self.owner == GIT_ATTRIBUTES:
            return (
                f"writing {self.path} changes which files git runs through the programs its "
                f"config names ({self.setting}), on your next git command"
            )
        if self.setting is not None:
            return (
                f"writing {self.path} changes a program git's config names ({self.setting}), "
                "which git runs on your next git command"
            )
        if self.key is None:
            return f"writing {self.path} changes {WHAT_CHANGES[self.owner]}"
        if self.compared:
            return f'writing {self.path} changes its "{self.key}" key: {WHAT_CHANGES[self.owner]}'
        return (
            f'writing {self.path} may change its "{self.key}" key (not valid JSON to compare): '
            f"{WHAT_CHANGES[self.owner]}"
        )


def protected_write(tool: Tool, args: dict[str, Any], workspace: Path) -> ProtectedWrite | None:
    """The protected file a call of ``tool`` with ``args`` would write, or None (not a
    ``write`` tool, no ``path``, a path the tool refuses anyway, or an ordinary file)."""
    if tool.kind != "write":
        return None
    path = args.get("path")
    if not isinstance(path, str):
        return None
    try:
        resolved = resolve_in_workspace(path, workspace)
    except ToolError:
        return None
    root = workspace.resolve()
    shown = display_path(resolved, root)
    routes = _routes(path, resolved, root)
    for parts, link in routes:
        owner = _owner_on_the_way(parts)
        if owner is not None:
            return ProtectedWrite(_through(shown, link), owner)
    home = _resolved_home()
    if home is not None and is_inside(home, root) and is_inside(resolved, home):
        return ProtectedWrite(shown, "dsh")
    layout = git_layout(root)
    if _read_by_git(resolved, root, layout):
        return ProtectedWrite(shown, GIT)
    if _run_by_git_as_a_hook(resolved, root, layout.hooks):
        return ProtectedWrite(shown, GIT_HOOKS)
    written = _compared(str(resolved))  # both resolved: their texts compare as their names
    program = next((p for p in layout.programs if _compared(str(p.path)) == written), None)
    if program is not None:
        return ProtectedWrite(shown, GIT_PROGRAM, setting=program.setting)
    if any(_within(resolved, templates) for templates in layout.templates):
        return ProtectedWrite(shown, GIT_TEMPLATES)
    if layout.drivers and _attributes(routes, resolved, layout.attributes_files):
        return ProtectedWrite(shown, GIT_ATTRIBUTES, setting=shown_drivers(layout.drivers))
    as_package = [link for parts, link in routes if parts[-1:] == (PACKAGE_JSON,)]
    if as_package:
        change = package_key_change(tool.name, args, resolved)
        if change is not None:
            owner = GIT_HOOKS if change.key is None else PACKAGE_KEYS[change.key]
            return ProtectedWrite(
                _through(shown, as_package[0]), owner, change.key, change.compared
            )
    return None


Route = tuple[tuple[str, ...], str | None]
"""A way the written file is reached by name: the names on the way (as ``_compared`` compares
them) and, when that way is not the file's own path, the link's path as the workspace shows it."""


def _routes(path: str, resolved: Path, root: Path) -> list[Route]:
    """The ways a write of ``path`` (resolved: ``resolved``) reaches its file by name: its own
    path, the path as given (``..`` collapsed, symlinks not followed), and a symlink at the
    workspace's top level named as protected that leads to the file or a directory above it."""
    own = tuple(_compared(name) for name in resolved.relative_to(root).parts)
    routes: list[Route] = [(own, None)]
    given = Path(os.path.normpath(root / Path(path).expanduser()))
    if given.is_relative_to(root):
        written = given.relative_to(root)
        parts = tuple(_compared(name) for name in written.parts)
        if parts != own:
            routes.append((parts, written.as_posix()))
    routes.extend(_top_level_links(resolved, root))
    return routes


def _owner_on_the_way(parts: tuple[str, ...]) -> str | None:
    """Whose configuration a file reached by these names (compared) is, if anyone's."""
    for at, name in enumerate(parts):
        owner = _owner_of_name(name)
        if owner is None and at > 0:
            owner = _UNDER.get((parts[at - 1], name))
            if (
                parts[at - 1] == "mise"
                and at == len(parts) - 1
                and _MISE_DIR_CONFIG.fullmatch(name)
            ):
                owner = MISE
        if owner is not None:
            return owner
    return None


def _owner_of_name(name: str) -> str | None:
    owner = PROTECTED_NAMES.get(name)
    if owner is None:
        owner = next((who for shape, who in _NAMED_LIKE if shape.fullmatch(name)), None)
    return owner


def _top_level_links(resolved: Path, root: Path) -> list[Route]:
    """The symlinks at the workspace's top level, named as a protected file or directory (or
    ``package.json``), that lead to ``resolved`` or a directory it lies in."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    found: list[Route] = []
    for entry in entries:
        if not entry.is_symlink():
            continue
        name = _compared(entry.name)
        if _owner_of_name(name) is None and name != PACKAGE_JSON:
            continue
        try:
            target = Path(os.path.realpath(entry.path))
        except (OSError, RuntimeError):  # a symlink loop leads nowhere
            continue
        if _within(resolved, target):
            found.append(((name, *_folded(resolved)[len(target.parts) :]), entry.name))
    return found


def _through(shown: str, link: str | None) -> str:
    """The written file as a prompt names it: reached through ``link``, both."""
    return shown if link is None else f"{shown} ({link} leads there)"


def _attributes(routes: list[Route], resolved: Path, named: tuple[Path, ...]) -> bool:
    """True if git reads the written file as attributes: a ``.gitattributes`` (its own name,
    or the name it is written by: a git before 2.32 follows one that is a symlink), or a file
    a config names."""
    if any(parts[-1:] == (ATTRIBUTES_NAME,) for parts, _ in routes):
        return True
    return any(_folded(resolved) == _folded(path) for path in named)


def _read_by_git(resolved: Path, root: Path, layout: GitLayout) -> bool:
    """True if git reads ``resolved`` as its own: it lies in a git directory git names, or in
    a directory that is one by its contents (a bare repository, a separate git directory), or
    it is a config file git reads (an include's target, the user's ``~/.gitconfig``)."""
    if any(_within(resolved, git_dir) for git_dir in layout.git_dirs):
        return True
    if any(_folded(resolved) == _folded(config) for config in layout.config_files):
        return True
    folder = resolved.parent
    while _within(folder, root):
        if looks_like_git_dir(folder):
            return True
        if folder == root:
            break
        folder = folder.parent
    return False


def _run_by_git_as_a_hook(resolved: Path, root: Path, hooks: Path | None) -> bool:
    """True if git runs ``resolved`` as a hook: it lies in the hooks directory git names (when
    that lies inside the workspace; when it is the workspace itself, only a hook's own name
    there counts), or a hook there is a symlink to it."""
    if hooks is None:
        return False
    if _folded(hooks) == _folded(root):
        if _folded(resolved.parent) == _folded(root) and runs_as_hook(_compared(resolved.name)):
            return True
    elif _within(hooks, root) and _within(resolved, hooks):
        return True
    return any(_folded(target) == _folded(resolved) for target in _linked_hooks(hooks))


def _linked_hooks(hooks: Path) -> list[Path]:
    """The files the hooks in ``hooks`` that are symlinks point at (resolved)."""
    try:
        entries = list(os.scandir(hooks))
    except OSError:  # no such directory (yet), or unreadable: no hook there
        return []
    targets = []
    for entry in entries:
        if runs_as_hook(_compared(entry.name)) and entry.is_symlink():
            try:
                targets.append(Path(entry.path).resolve())
            except (OSError, RuntimeError):  # a symlink loop: git cannot run it either
                continue
    return targets


def _folded(path: Path) -> tuple[str, ...]:
    return tuple(_compared(part) for part in path.parts)


def _within(path: Path, folder: Path) -> bool:
    """``path`` is ``folder`` or below it, names compared as ``_compared`` compares them."""
    inner, outer = _folded(path), _folded(folder)
    return inner[: len(outer)] == outer


def _compared(name: str) -> str:
    """A name as a case-insensitive disk that ignores some invisible characters compares it."""
    return _IGNORED_BY_HFS.sub("", name).casefold()


def _resolved_home() -> Path | None:
    try:
        return dsh_home().resolve()
    except (ConfigError, OSError, RuntimeError):  # a broken DSH_HOME is reported where it is used
        return None
