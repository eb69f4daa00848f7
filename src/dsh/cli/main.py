"""The ``dsh`` command: parsing only; each group lives in its own module.

Command groups load lazily: ``dsh --help`` and ``dsh --version`` import none of them (the web
server, the bench, YAML and the store stay unloaded); running a command imports only its module.
Parsing imports neither ``logging`` nor ``pathlib``: the warning handler is set up once a command
line has parsed (``ConsoleScript``) and path options build their ``Path`` on demand.
The one-line summaries in ``--help`` come from ``COMMANDS`` so that listing needs no import;
a test checks each against the command's own docstring.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from dsh import __version__  # ``dsh`` loads its facade lazily: this imports no subsystem
from dsh.cli import standard_streams
from dsh.cli.options import PathlibPath, approval_options, route_options
from dsh.errors import DshError, error_line

if TYPE_CHECKING:
    from pathlib import Path

    from dsh.cli.options import ApprovalFlags, RouteFlags

COMMANDS: dict[str, tuple[str, str]] = {
    "bench": (
        "dsh.cli.bench:bench",
        "Measure compaction honestly: cost, cache hits and what the model can still use.",
    ),
    "compact": (
        "dsh.cli.compact:compact",
        "Compact a stored, idle session and print what happened.",
    ),
    "demo": (
        "dsh.cli.demo:demo",
        "Run a scripted coding session (no API key needed) and print what happened.",
    ),
    "mcp": (
        "dsh.cli.mcp:mcp",
        "List the configured MCP servers, whether they start, and the tools they offer.",
    ),
    "recall": (
        "dsh.cli.recall:recall",
        "Search and read compacted history, as the model's recall tools do.",
    ),
    "run": (
        "dsh.cli.run:run",
        "Run prompts headless: each turn's final answer on stdout, the session id on stderr.",
    ),
    "sessions": (
        "dsh.cli.sessions:sessions",
        "List, show, export, import, fork, repair and move stored sessions.",
    ),
    "trust": (
        "dsh.cli.trust:trust",
        "Trust DIRECTORY (default: the current one) as its ./.dsh/config.toml is now: that file "
        "may then loosen approval, the provider endpoint and the summariser provider, and start "
        "MCP servers, until it changes.",
    ),
    "undo": (
        "dsh.cli.undo:undo",
        "Undo the file changes the model made in its last turn.",
    ),
    "web": ("dsh.cli.web:web", "Serve the browser client for your sessions on this machine."),
}
"""name -> ("module:attribute", the first sentence of its help, which ``--help`` shortens)."""


PRINT_FLAGS = ("-p", "--print")
"""``dsh -p PROMPT``: ``dsh run PROMPT`` (``as_run``)."""


def as_run(args: list[str]) -> list[str]:
    """``args`` with ``-p`` / ``--print`` given before any command (or after the prompt) made
    ``run`` in front of the rest: ``dsh --model m -p "fix it"`` is ``dsh run --model m "fix
    it"``, so it takes ``run``'s options. Unchanged when neither is given, or only after ``--``
    or a command's name."""
    for index, word in enumerate(args):
        if word == "--" or word in COMMANDS:
            return args
        if word in PRINT_FLAGS:
            return ["run", *args[:index], *args[index + 1 :]]
    return args


def load_command(name: str) -> click.Command:
    """Import the command ``name`` from its module (``COMMANDS`` says where it lives)."""
    target, _ = COMMANDS[name]
    module, attribute = target.split(":")
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command)
    return command


class LazyGroup(click.Group):
    """The root group: commands import on first use; a DshError prints as one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.add_command(load_command(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """``dsh -p …`` is ``dsh run …`` (``as_run``); the words as given are kept for
        ``resolve_command`` (a ``--`` before them makes them a prompt)."""
        args = as_run(args)
        ctx.meta["dsh.args"] = list(args)
        return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """A first word that names no command is a prompt: the terminal UI opens with it
        (``dsh.cli.first_prompt``, which says the rule), unless it looks like a command
        misspelt; after ``--`` it always is."""
        raw = ctx.meta.get("dsh.args", [])
        dashed = "--" in raw and raw[raw.index("--") + 1 :] == args
        if not dashed and (args[0] in COMMANDS or args[0] in self.commands):
            return super().resolve_command(ctx, args)
        from dsh.cli import first_prompt  # only for a prompt: --help stays light

        near = first_prompt.typo_of(args[0], COMMANDS)
        if near is not None and not dashed:
            first_prompt.refuse_typo(args[0], near)
        return first_prompt.PROMPT, first_prompt.prompt_command, args

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [
            (name, click.Command(name, help=summary).get_short_help_str(limit))
            for name, (_, summary) in sorted(COMMANDS.items())
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse the command line. ``dsh --help`` and ``dsh --version`` print here, before any
        command runs: stdout's reader going away then ends them as it ends a command (a quiet
        exit 141), where click's own handling exited 1."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError as exc:
            standard_streams.leave_if_reader_gone(exc)
            raise

    def invoke(self, ctx: click.Context) -> object:
        """Run the parsed command line; a ``DshError`` or an ``OSError`` becomes one
        ``dsh: error:`` line, except stdout's reader going away: a quiet exit 141."""
        if isinstance(ctx.obj, ConsoleScript):
            ctx.obj.start()
        try:
            return super().invoke(ctx)
        except DshError as exc:
            from dsh.cli.context import fail

            fail(exc)
            return None  # pragma: no cover - fail exits
        except OSError as exc:  # the OS refused a file dsh was told to use (a missing
            # directory, a read-only home, a full disk): one line naming it, not a traceback
            standard_streams.leave_if_reader_gone(exc)  # ``dsh … | head``: it has its part
            where = f"{exc.filename}: " if exc.filename is not None else ""
            if not where and not _cwd_exists():
                where = "the current directory no longer exists (cd to one that does): "
            click.echo(f"dsh: error: {error_line(f'{where}{exc.strerror or exc}')}", err=True)
            sys.exit(1)


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except OSError:
        return False
    return True


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    subcommand_metavar="[PROMPT | COMMAND [ARGS]...]",
)
@click.version_option(__version__, "--version", prog_name="dsh")
@click.option(
    "-p",
    "--print",
    "print_mode",
    is_flag=True,
    help="Run PROMPT headless, as `dsh run PROMPT` with its options (dsh -p PROMPT --json …).",
)
@click.option(
    "--resume",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[ID]",
    help=(
        "Open the terminal UI on session ID (a unique prefix works); with no ID, a picker of "
        "every session, from all workspaces (not in a terminal: the one used last here)."
    ),
)
@click.option(
    "--continue",
    "-c",
    "last",
    is_flag=True,
    help="Open the terminal UI on the session used last in this workspace (no picker).",
)
@click.option(
    "--cwd",
    "workspace_dir",
    type=PathlibPath(exists=True, file_okay=False),
    help="Workspace for the UI's tools (default: here, or a resumed session's own workspace).",
)
@route_options
@approval_options
@click.pass_context
def cli(
    ctx: click.Context,
    print_mode: bool,
    resume: str | None,
    last: bool,
    workspace_dir: Path | None,
    route_flags: RouteFlags,
    approval_flags: ApprovalFlags,
) -> None:
    """dsh: an agent harness for long coding sessions that never loses history.

    With no command, dsh opens the terminal UI in the current directory; `dsh PROMPT` opens it
    with PROMPT sent as the first turn (any first word that is not a command; after `--`, any
    word), `dsh -p PROMPT` runs it headless (`dsh run`). Every interaction is an append-only
    event log; what the model sees and what you see are two projections of it.
    """
    if print_mode:  # ``as_run`` took it out, unless it came where it cannot apply
        raise click.UsageError("-p/--print goes before the prompt: dsh -p PROMPT")
    if ctx.invoked_subcommand == "PROMPT":  # the UI flags given before it: the prompt's
        ctx.meta["dsh.before_prompt"] = {
            "resume": resume,
            "last": last,
            "workspace_dir": workspace_dir,
            "route_flags": route_flags,
            "approval_flags": approval_flags,
        }
        return
    if ctx.invoked_subcommand is None:
        from dsh.cli.tui import launch  # Textual loads only when the UI is wanted

        launch(
            resume,
            False,
            workspace_dir,
            route_flags=route_flags,
            approval_flags=approval_flags,
            last=last,
        )
        return
    given = [
        *(["--resume"] if resume is not None else []),
        *(["--continue"] if last else []),
        *(["--cwd"] if workspace_dir is not None else []),
        *route_flags.given(),
        *approval_flags.given(),
    ]
    if given:
        raise click.UsageError(
            f"{', '.join(given)} before a command open the terminal UI; give the flags after "
            "the command (dsh run --provider …)"
        )


class ConsoleScript:
    """``ctx.obj`` of a run of the ``dsh`` console script (``main``).

    Tests that drive ``cli`` directly pass none, so their warnings stay with pytest's log capture.
    """

    def start(self) -> None:
        """Once the command line has parsed, before any command runs (so before any tool or
        MCP server): dsh's process is made unreadable to the commands it runs
        (``dsh.tools.process_guard``; the console script did so already, first thing,
        ``dsh.cli.entry``: this is for a caller of :func:`main` itself), and its warnings go
        to stderr, one escaped line each (``dsh.cli.warning_lines``; the terminal UI shows
        them itself while it runs, ``dsh.tui.app_warnings``).

        Not earlier, so parsing alone (``dsh --help``, ``dsh --version``) never loads ``logging``.
        """
        from dsh.tools.process_guard import protect_process

        protect_process()
        from dsh.cli.warning_lines import print_to_stderr

        print_to_stderr()


EXIT_INTERRUPTED = 130
"""128 + SIGINT: a command Ctrl-C stopped (one that cancels its work cleanly included)."""


def main() -> None:
    """The ``dsh`` console script: run the command line; click's errors print as one line."""
    standard_streams.reserve()  # before any file is opened: see the module doc
    try:
        _run_command()
    finally:  # a stop signal while the interpreter exits ends it quietly
        termination = sys.modules.get("dsh.cli.termination")  # imported by what installed it
        if termination is not None:
            termination.settle()


def _run_command() -> None:
    try:
        code = cli.main(standalone_mode=False, obj=ConsoleScript())
    except click.exceptions.NoArgsIsHelpError as exc:  # a group with no command: its help
        exc.show()
        sys.exit(exc.exit_code)
    except click.UsageError as exc:  # click's own usage errors, as one line like the others
        where = exc.ctx.command_path if exc.ctx is not None else "dsh"
        message = error_line(exc.format_message())
        click.echo(f"dsh: error: {message.rstrip('.')} (see `{where} --help`)", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"dsh: error: {error_line(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)
    except click.Abort as exc:  # click's word for a KeyboardInterrupt (Ctrl-C) it caught
        if isinstance(exc.__cause__, KeyboardInterrupt):
            click.echo("dsh: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        click.echo("dsh: aborted", err=True)
        sys.exit(1)
    if isinstance(code, int) and code:
        sys.exit(code)
