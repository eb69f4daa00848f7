"""``dsh demo``: a keyless showcase on real files (see ``dsh.demo``)."""

from __future__ import annotations

import click

from dsh.cli import context
from dsh.demo import prepare_workspace, run_demo
from dsh.transcript import render_human_transcript
from dsh.transcript.stats import render_stats, session_stats


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the temporary workspace afterwards.")
def demo(keep: bool) -> None:
    """Run a scripted coding session (no API key needed) and print what happened."""
    workspace = prepare_workspace()
    session, results = run_demo(context.store(), workspace=workspace, keep=keep)
    click.echo(render_human_transcript(session.events))
    click.echo()
    click.echo(render_stats(session_stats(session.events)))
    click.echo()
    click.echo(f"session: {session.id}")
    if keep:
        click.echo(f"workspace: {workspace}")
    click.echo(f"explore it: dsh sessions show {session.id} --view events")
    failed = [r for r in results if r.reason != "completed"]
    if failed:
        raise SystemExit(1)
