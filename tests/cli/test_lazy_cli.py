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
    "dsh.cli.bench",
    "dsh.cli.web",
    "dsh.store",
    "dsh.surface",
    "dsh.config",
    "yaml",
    "starlette",
    "uvicorn",
    "msgspec",
    "dsh.bench",
    "dsh.web",
]


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_nothing_heavy(flag):
    probe = (
        f"import sys\nfrom dsh.cli.main import main\nsys.argv = ['dsh', {flag!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "import json\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert [name for name in HEAVY if name in loaded] == []
    assert ("Commands:" in done.stdout) if flag == "--help" else (dsh.__version__ in done.stdout)


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
    assert ran.exit_code == 0 and "List, show and export" in ran.output
    assert cli.get_command(click.Context(cli), "nope") is None
