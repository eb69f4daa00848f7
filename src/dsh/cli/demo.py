"""``dsh demo``: a keyless showcase on real files (see ``dsh.demo``)."""

from __future__ import annotations

from importlib import resources

import click

from dsh.cli import context
from dsh.demo import PROMPTS, prepare_workspace, run_demo
from dsh.transcript import render_human_transcript
from dsh.transcript.stats import render_stats, session_stats


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the temporary workspace afterwards.")
@click.option("--tui", is_flag=True, help="Open the terminal UI on the demo: you type the prompts.")
def demo(keep: bool, tui: bool) -> None:
    """Run a scripted coding session (no API key needed) and print what happened."""
    if tui:
        _demo_tui()
        return
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


def _demo_tui() -> None:
    """The terminal UI on a throwaway copy of the demo project, answered by the demo script."""
    from dsh.cli.tui import launch

    workspace = prepare_workspace()
    greeting = (
        f"Demo: a scripted model (no API key) on a throwaway project in {workspace}.\n"
        f"Try: {PROMPTS[0]}\nthen: {PROMPTS[1]}\n"
        "The script answers each prompt in turn, whatever you type; its edits ask first."
    )
    with resources.as_file(resources.files("dsh.demo") / "script.yaml") as script:
        launch(
            None,
            False,
            workspace,
            provider={"name": "scripted", "model": "demo"},
            script=script,
            greeting=greeting,
        )
