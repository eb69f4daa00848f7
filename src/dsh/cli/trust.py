"""``dsh trust [DIR] [--remove] [--list]``: let a workspace's own config loosen safety settings.

A repository's ``./.dsh/config.toml`` may only tighten approval, the scrubbed environment, the
endpoint and the summariser provider, and may start no MCP server (see :mod:`dsh.config`).
Trusting a directory records it in the user's ``$DSH_HOME/config.toml`` under ``[trust]``,
with the digest of its ``.dsh/config.toml`` as it is now; from then on that project config
applies in full, until the file changes (then it is untrusted again, with a warning, until
``dsh trust`` is run there again: :mod:`dsh.config.trust`). ``--list`` says of each directory
whether its trust holds. A file that does not load is not trusted (an untrusted one is ignored
with a warning; a trusted one would be refused by every command there).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from dsh.cli import context
from dsh.config import (
    ProjectConfigError,
    TrustState,
    dsh_home,
    load_settings,
    set_trust,
    trust_records,
    trust_state,
)
from dsh.config.trust import forget_trust
from dsh.errors import ConfigError, UsageError, printable_line

LISTED_STATES: dict[TrustState, str] = {
    "trusted": "current",
    "changed": "changed since trusted: untrusted until you review .dsh/config.toml and run "
    "`dsh trust` there again",
    "unpinned": "trusted by an older dsh without a record of .dsh/config.toml: untrusted until "
    "you review it and run `dsh trust` there again",
    "untrusted": "untrusted: the path now leads elsewhere (a symlink)",
}
"""How ``--list`` describes each recorded directory's trust as it is now."""


@click.command("trust")
@click.argument(
    "directory",
    required=False,
    type=click.Path(file_okay=False, path_type=Path),  # --remove takes a directory gone since
)
@click.option(
    "--remove",
    is_flag=True,
    help="Stop trusting the directory (one deleted since: by the path it was recorded with).",
)
@click.option(
    "--list", "show", is_flag=True, help="List the trusted directories and whether each holds."
)
def trust(directory: Path | None, remove: bool, show: bool) -> None:
    """Trust DIRECTORY (default: the current one) as its ./.dsh/config.toml is now: that file
    may then loosen approval, the provider endpoint and the summariser provider, and start MCP
    servers, until it changes. Review the file before you trust it; one that does not load is
    refused."""
    if show:
        if directory is not None or remove:
            raise click.UsageError("--list takes no directory and no --remove")
        listed = trust_records()
        for name in listed:
            found = Path(name).is_dir()
            shown = LISTED_STATES[trust_state(Path(name))] if found else "directory not found"
            click.echo(f"{printable_line(name)}  ({shown})")
        if not listed:
            click.echo("no trusted directories")
        return
    if remove and directory is not None and not directory.is_dir():
        _remove_gone(directory)
        return
    if directory is not None and not directory.is_dir():  # as click's own check says it
        raise click.BadParameter(
            f"Directory {str(directory)!r} does not exist.", param_hint="'[DIRECTORY]'"
        )
    target = (directory or context.cwd()).resolve()
    if not remove:  # trusted, a file that does not load would stop every command there
        try:
            load_settings(cwd=target, trust_project=True)
        except ProjectConfigError as exc:
            raise ConfigError(
                f"not trusting {target}: {exc.path} does not load: {exc.reason}; fix it first"
            ) from exc
    before = trust_state(target)
    changed = set_trust(target, not remove)
    where = dsh_home() / "config.toml"
    if remove and not changed:  # nothing recorded, nothing written
        click.echo(f"{printable_line(str(target))}: was not trusted; nothing to remove")
        return
    if remove:
        state = "no longer trusted"
    elif not changed:
        state = "already trusted"
    elif before == "untrusted":
        state = "trusted as its .dsh/config.toml is now"
    else:
        state = "trusted again, as its .dsh/config.toml is now"
    click.echo(f"{printable_line(str(target))}: {state} (recorded in {printable_line(str(where))})")


def _remove_gone(directory: Path) -> None:
    """``--remove`` of a directory that is not there (deleted, moved): its record, found by the
    path as given, made absolute (``..`` collapsed) or resolved through the symlinks that are
    still there, is removed; a path no record names is refused, with where to look."""
    where = dsh_home() / "config.toml"
    absolute = Path(os.path.abspath(context.cwd() / directory))
    for name in dict.fromkeys([str(directory), str(absolute), str(absolute.resolve())]):
        if forget_trust(name):
            shown = printable_line(name)
            click.echo(
                f"{shown}: no longer trusted (the directory is gone; its record was removed from "
                f"{printable_line(str(where))})"
            )
            return
    what = "is not a directory" if absolute.exists() else "does not exist"
    raise UsageError(
        f"{printable_line(str(absolute))} {what}, and no trusted directory is recorded by that "
        "path (dsh trust --list shows them)"
    )
