"""``dsh --help`` / ``--version`` load no command group; the lazy table matches the commands."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

import dsh
from dsh.cli.main import COMMANDS, cli, load_command

HEAVY = [
    # command groups and the subsystems behind them
    "dsh.cli.bench",
    "dsh.cli.web",
    "dsh.cli.tui",
    "dsh.store",
    "dsh.surface",
    "dsh.config",
    "dsh.agent",
    "dsh.llm",
    "dsh.bench",
    "dsh.web",
    "dsh.tui",
    # third-party packages only commands need
    "yaml",
    "starlette",
    "uvicorn",
    "msgspec",
    "textual",
    "openai",
    "anthropic",
    "httpx",
    "platformdirs",
    "mcp",
    # standard modules parsing does without: warnings are routed once a command line has
    # parsed, and path options build their ``Path`` on demand
    "asyncio",
    "logging",
    "pathlib",
]


def modules_loaded_by(argv: list[str]) -> tuple[set[str], str]:
    """The modules that importing ``dsh.cli.main`` and running ``main()`` on ``argv`` added to
    ``sys.modules`` in a fresh interpreter (not counting what it had loaded before), and stdout."""
    probe = (
        "import json, sys\nbefore = set(sys.modules)\nfrom dsh.cli.main import main\n"
        f"sys.argv = ['dsh', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(set(sys.modules) - before)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(done.stderr.strip().splitlines()[-1])), done.stdout


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_nothing_heavy(flag):
    loaded, output = modules_loaded_by([flag])
    assert [name for name in HEAVY if name in loaded] == []
    expected_version = f"dsh, version {dsh.__version__}\n"
    assert ("Commands:" in output) if flag == "--help" else (output == expected_version)


def test_running_a_command_loads_only_its_own_group():
    loaded, output = modules_loaded_by(["sessions", "--help"])
    assert "List, show, export, import" in output
    assert "dsh.cli.sessions" in loaded and "logging" in loaded  # warnings are routed from here
    others = [f"dsh.cli.{name}" for name in COMMANDS if name != "sessions"]
    assert [name for name in others if name in loaded] == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_summary_is_the_commands_own(name):
    command = load_command(name)
    assert command.name == name
    _, summary = COMMANDS[name]
    for limit in (30, 45, 60, 120):
        assert click.Command(name, help=summary).get_short_help_str(
            limit
        ) == command.get_short_help_str(limit)


def test_help_lists_every_command_and_commands_still_run():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in result.output
    ran = CliRunner().invoke(cli, ["sessions", "--help"])
    assert ran.exit_code == 0 and "List, show, export, import" in ran.output
    assert cli.get_command(click.Context(cli), "nope") is None
