"""``dsh demo``: a keyless showcase on real files (see ``dsh.demo``)."""

from __future__ import annotations

import click

from dsh.cli import context
from dsh.cli.options import RouteFlags
from dsh.demo import (
    DEMO_OVERRIDES,
    PROMPTS,
    demo_script,
    lasting_demo_script,
    run_demo,
    throwaway_workspace,
)
from dsh.demo.narration import Narrator
from dsh.transcript.stats import render_stats, session_stats


@click.command("demo")
@click.option(
    "--keep", is_flag=True, help="Keep the temporary workspace afterwards (its path is printed)."
)
@click.option("--tui", is_flag=True, help="Open the terminal UI on the demo: you type the prompts.")
def demo(keep: bool, tui: bool) -> None:
    """Run a scripted coding session (no API key needed) and print what happened.

    It runs on a throwaway copy of a small project in the temporary directory, removed at the
    end (with --tui: when the UI quits) unless --keep is given.
    """
    if tui:
        _demo_tui(keep)
        return
    narrator = Narrator(click.echo)
    with throwaway_workspace(keep=keep) as workspace:
        session, results = run_demo(context.store(), workspace=workspace, on_event=narrator)
    click.echo()
    click.echo(render_stats(session_stats(session.events)))
    click.echo()
    click.echo(f"session: {session.id}")
    if keep:
        click.echo(f"workspace: {workspace}")
    click.echo(f"the transcript: dsh sessions show {session.id}")
    click.echo(f"what the model saw: dsh sessions show {session.id} --view surface")
    click.echo(f"every event: dsh sessions show {session.id} --view events")
    failed = [r for r in results if r.reason != "completed"]
    if failed:
        raise SystemExit(1)


def _demo_tui(keep: bool) -> None:
    """The terminal UI on a throwaway copy of the demo project, answered by the demo script;
    the copy is removed when the UI quits, unless ``keep`` (then its path is printed)."""
    from dsh.cli.tui import launch, refuse_without_terminal

    refuse_without_terminal()  # before a throwaway project is made for nothing
    prompts = "\n".join(f"  {n}. {prompt}" for n, prompt in enumerate(PROMPTS, 1))
    fate = "kept when you quit" if keep else "removed when you quit (--keep keeps it)"
    with throwaway_workspace(keep=keep) as workspace:
        greeting = (
            f"Demo: a scripted model (no API key) on a throwaway project in {workspace}, "
            f"{fate}.\n"
            f"Try, in order:\n{prompts}\n"
            "The script answers each prompt in turn, whatever you type; its edits ask first. "
            "The window is small: turn 3 compacts, turn 4 recalls a detail from before."
        )
        try:
            with demo_script() as script:
                launch(
                    None,
                    False,
                    workspace,
                    route_flags=RouteFlags(script=script),
                    settings_overrides=DEMO_OVERRIDES,
                    greeting=greeting,
                    on_quit=lambda session_id: after_the_demo(session_id, kept=keep),
                )
        finally:  # the UI may end with its exit code (a SystemExit): said all the same
            if keep:
                click.echo(f"workspace: {workspace}")


def after_the_demo(session_id: str, *, kept: bool) -> list[str]:
    """What ``dsh demo --tui`` prints of its session when the UI quits: where its transcript is
    (the log outlives the throwaway project); with ``--keep``, how to reopen it in the kept
    project, answered by the demo's script (``dsh --resume ID`` alone would ask for
    ``--script``). Without ``--keep`` no way to resume it: its workspace is gone."""
    from dsh.cli.tui import resume_hint

    lines = [f"the transcript: dsh sessions show {session_id}"]
    script = lasting_demo_script()
    if kept and script is not None:
        lines += resume_hint(session_id, script=script)
    return lines
