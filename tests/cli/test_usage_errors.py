"""Click's own usage errors print as one ``dsh: error: …`` line like every other error,
exit 2 (the real entry point, as a subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

DSH = str(Path(sys.executable).with_name("dsh"))


def dsh(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DSH, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["run", "--bogus"], "dsh: error: No such option '--bogus' (see `dsh run --help`)"),
        (
            ["sessions", "nosuch"],
            "dsh: error: No such command 'nosuch' (see `dsh sessions --help`)",
        ),
        (
            ["sesions"],  # a first word that is no command is a prompt, but not a near miss
            "dsh: error: no command 'sesions' (did you mean sessions?); to send it as the first "
            "prompt: dsh -- sesions (see `dsh --help`)",
        ),
        (
            ["run", "--max-steps", "x", "hi"],
            "dsh: error: Invalid value for '--max-steps': 'x' is not a valid integer range "
            "(see `dsh run --help`)",
        ),
    ],
)
def test_a_click_usage_error_is_one_line_and_exits_2(tmp_path: Path, args: list[str], line: str):
    done = dsh(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == line + "\n" and done.stdout == ""


def test_help_and_version_still_exit_0(tmp_path: Path):
    assert dsh("--version", cwd=tmp_path).returncode == 0
    helped = dsh("run", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: dsh run")


def test_a_second_dash_prompt_is_refused_not_read_as_an_empty_stdin(tmp_path: Path):
    script = tmp_path / "s.json"
    script.write_text('[{"text": "hi"}]')
    done = subprocess.run(
        [DSH, "run", "--script", str(script), "-", "-"],
        input="a prompt",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == "dsh: error: the prompt '-' (read from stdin) may be given once\n"


def every_command() -> list[tuple[list[str], click.Command]]:
    """Each command and group of ``dsh`` (the root included) with its command path."""
    from dsh.cli.main import cli

    found: list[tuple[list[str], click.Command]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        found.append((path, command))
        if isinstance(command, click.Group):
            context = click.Context(command)
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                assert sub is not None
                walk(sub, [*path, name])

    walk(cli, [])
    return found


COMMANDS = every_command()


@pytest.mark.parametrize(
    "path", [path for path, _ in COMMANDS], ids=lambda path: " ".join(path) or "dsh"
)
def test_every_help_reads_as_plain_text(tmp_path: Path, path: list[str]):
    """``--help`` shows docstrings as written: reStructuredText marks (``--to``) are noise."""
    helped = dsh(*path, "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "``" not in helped.stdout


def test_every_option_has_a_line_of_help():
    unexplained = [
        f"{' '.join(['dsh', *path])} {param.opts[0]}"
        for path, command in COMMANDS
        for param in command.params
        if isinstance(param, click.Option) and not param.help and param.name != "help"
    ]
    assert unexplained == []
