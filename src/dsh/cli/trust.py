"""``dsh trust [DIR] [--remove] [--list]``: let a workspace's own config loosen safety settings.

A repository's ``./.dsh/config.toml`` may only tighten approval, the scrubbed environment, the
endpoint and the summariser provider, and may start no MCP server (see :mod:`dsh.config`).
Trusting a directory records it in the user's ``$DSH_HOME/config.toml`` under ``[trust]
directories``; from then on its project config applies in full.
"""

from __future__ import annotations

from pathlib import Path

import click

from dsh.cli import context
from dsh.config import dsh_home, set_trust, trusted_directories


@click.command("trust")
@click.argument(
    "directory",
    required=False,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option("--remove", is_flag=True, help="Stop trusting the directory.")
@click.option("--list", "show", is_flag=True, help="List the trusted directories.")
def trust(directory: Path | None, remove: bool, show: bool) -> None:
    """Trust DIRECTORY (default: the current one): its ./.dsh/config.toml may then loosen
    approval, the provider endpoint and the summariser provider, and start MCP servers."""
    if show:
        if directory is not None or remove:
            raise click.UsageError("--list takes no directory and no --remove")
        listed = trusted_directories()
        click.echo("\n".join(listed) if listed else "no trusted directories")
        return
    target = (directory or context.cwd()).resolve()
    changed = set_trust(target, not remove)
    where = dsh_home() / "config.toml"
    if remove:
        state = "no longer trusted" if changed else "was not trusted"
    else:
        state = "trusted" if changed else "already trusted"
    click.echo(f"{target}: {state} (recorded in {where})")
