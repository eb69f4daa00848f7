"""The ``dsh`` command: parsing only; each group lives in its own module."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from dsh import __version__
from dsh.cli import context
from dsh.cli.bench import bench
from dsh.cli.compact import compact
from dsh.cli.demo import demo
from dsh.cli.recall import recall
from dsh.cli.run import run
from dsh.cli.sessions import sessions
from dsh.cli.trust import trust
from dsh.cli.web import web


@click.group(cls=context.DshGroup, invoke_without_command=True)
@click.version_option(__version__, "--version", prog_name="dsh")
@click.option(
    "--resume",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[ID]",
    help="Open the terminal UI on a session: the newest one here, or ID (a unique prefix works).",
)
@click.option(
    "--cwd",
    "workspace_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Workspace for the UI's tools (default: here, or a resumed session's own workspace).",
)
@click.pass_context
def cli(ctx: click.Context, resume: str | None, workspace_dir: Path | None) -> None:
    """dsh: an agent harness for long coding sessions that never loses history.

    With no command, dsh opens the terminal UI in the current directory. Every interaction is
    an append-only event log; what the model sees and what you see are two projections of it.
    """
    if ctx.invoked_subcommand is None:
        from dsh.cli.tui import launch  # Textual loads only when the UI is wanted

        launch(resume, False, workspace_dir)
    elif resume is not None or workspace_dir is not None:
        raise click.UsageError("--resume and --cwd open the terminal UI; they take no command")


cli.add_command(sessions)
cli.add_command(run)
cli.add_command(demo)
cli.add_command(compact)
cli.add_command(recall)
cli.add_command(web)
cli.add_command(bench)
cli.add_command(trust)


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"dsh: {record.levelname.lower()}: {' '.join(record.getMessage().split())}"


def main() -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine())
    root = logging.getLogger("dsh")
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    root.propagate = False
    cli()
