"""Where an MCP server runs, and how it learns the workspace.

A server's program is resolved by its launcher from its working directory: ``npx -y pkg`` runs
``./node_modules/pkg`` when it is there, ``python3 -m mod`` imports ``./mod.py`` first. Started in
the workspace, the user's own servers would run the code of any repository dsh is opened in, before
the first prompt and without any approval. So a server whose config sets no ``cwd`` runs in
:func:`servers_directory` (``$DSH_HOME/mcp``, dsh's own), where a repository cannot put files. A
trusted project's own servers are the exception, decided when the config is read
(``dsh.config.mcp_servers.anchor_project_servers``): they run in that project's directory, whose
programs the user trusted. A ``cwd`` that is set is kept (a relative one is taken from the
workspace, so ``cwd = "."`` is the workspace, by choice).

The workspace reaches every server explicitly instead: as ``DSH_WORKSPACE`` in its environment
(its ``env`` may still set that name), and as :data:`WORKSPACE` (``{workspace}``) replaced by
the workspace's path in its ``command``, its ``env`` values and its ``cwd``: the filesystem
server's root argument is ``"{workspace}"``. ``PWD`` is the directory it runs in, as a shell
would set it. A server with no ``cwd`` whose arguments include a relative path (``.``,
``./x``, ``../x``: the docs' old ``server-filesystem .``) gets one warning saying that it names
dsh's directory, not the workspace.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from pathlib import Path

import msgspec

from dsh.config import McpServerSettings, dsh_home
from dsh.config.private_dirs import make_private_directory

log = logging.getLogger("dsh.tools.mcp")

WORKSPACE = "{workspace}"
"""Replaced by the workspace's path in a server's command, env values and cwd."""
WORKSPACE_VARIABLE = "DSH_WORKSPACE"
SERVERS_DIRECTORY = "mcp"
"""Under ``$DSH_HOME``: where a server with no ``cwd`` runs."""


def servers_directory() -> Path:
    """``$DSH_HOME/mcp``, made ``0700`` (as every directory dsh makes there) if it is not there; a
    failure to make it is left for the server's start to say (its working directory does not
    exist)."""
    directory = dsh_home() / SERVERS_DIRECTORY
    with contextlib.suppress(OSError):
        make_private_directory(directory)
    return directory


def placed(
    name: str, settings: McpServerSettings, workspace: Path, environment: Mapping[str, str]
) -> tuple[McpServerSettings, dict[str, str], Path]:
    """Server ``name``'s ``settings`` with ``{workspace}`` replaced, the environment it starts
    with (``environment`` plus ``DSH_WORKSPACE`` and ``PWD``; its own ``env`` goes on top when it
    starts) and the directory it runs in."""
    where = str(workspace)
    command = [part.replace(WORKSPACE, where) for part in settings.command]
    env = {key: value.replace(WORKSPACE, where) for key, value in settings.env.items()}
    if settings.cwd is None:
        cwd = servers_directory()
        _warn_of_relative_paths(name, settings.command[1:], cwd)
    else:
        cwd = workspace / Path(settings.cwd.replace(WORKSPACE, where)).expanduser()
    resolved = msgspec.structs.replace(settings, command=command, env=env, cwd=str(cwd))
    return resolved, {**environment, WORKSPACE_VARIABLE: where, "PWD": str(cwd)}, cwd


def _warn_of_relative_paths(name: str, arguments: list[str], cwd: Path) -> None:
    """One warning when an argument is a relative path, which names ``cwd``, not the workspace."""
    relative = [a for a in arguments if a in (".", "..") or a.startswith(("./", "../"))]
    if relative:
        log.warning(
            'MCP server %s runs in %s, not in the workspace, so its argument "%s" names a path '
            'there: write "%s" for the workspace, or set its cwd (docs/usage.md, "MCP servers")',
            name,
            cwd,
            relative[0],
            WORKSPACE,
        )
