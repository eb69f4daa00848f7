"""``dsh PROMPT`` opens the terminal UI with PROMPT as its first turn and ``dsh -p PROMPT`` runs
it headless as ``dsh run PROMPT``; a command's name is never a prompt, and a one-word prompt that
looks like a command misspelt is refused naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import dsh.cli.tui as tui_face
from dsh.cli import main
from dsh.cli.main import COMMANDS, cli
from dsh.cli.options import ApprovalFlags, RouteFlags

DSH = str(Path(sys.executable).with_name("dsh"))


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """What ``launch`` (the terminal UI) was called with, instead of running it."""
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    calls: list[dict[str, Any]] = []

    def launch(resume: Any, new: bool, workspace_dir: Any = None, **kwargs: Any) -> None:
        calls.append({"resume": resume, "workspace_dir": workspace_dir, **kwargs})

    monkeypatch.setattr(tui_face, "launch", launch)
    return calls


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(
    ("args", "prompt"),
    [
        (["fix the bug"], "fix the bug"),
        (["fix", "the", "bug"], "fix the bug"),  # unquoted words are one prompt
        (["hello"], "hello"),
        (["--", "sessions"], "sessions"),  # after --, even a command's name
        (["--", "sesions", "list"], "sesions list"),
    ],
)
def test_a_first_word_that_is_no_command_opens_the_ui_with_it_as_the_first_prompt(
    launched: list[dict[str, Any]], args: list[str], prompt: str
) -> None:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    (call,) = launched
    assert call["first_prompt"] == prompt
    assert call["resume"] is None and call["last"] is False
    assert call["route_flags"] == RouteFlags() and call["approval_flags"] == ApprovalFlags()


def test_the_ui_flags_go_before_or_after_the_prompt(
    launched: list[dict[str, Any]], tmp_path: Path
) -> None:
    result = invoke("--continue", "--provider", "anthropic", "and the tests", "--yes", "--cwd", ".")
    assert result.exit_code == 0, result.output
    (call,) = launched
    assert call["first_prompt"] == "and the tests" and call["last"] is True
    assert call["route_flags"] == RouteFlags(provider="anthropic")
    assert call["approval_flags"].yes is True
    assert call["workspace_dir"] == Path(".")


def test_a_flag_given_on_both_sides_of_the_prompt_is_refused(
    launched: list[dict[str, Any]],
) -> None:
    result = invoke("--model", "a", "fix it", "--model", "b")
    assert result.exit_code == 2 and not launched
    assert "--model given both before and after the prompt: give it once" in result.output


@pytest.mark.parametrize(("word", "command"), [("sesions", "sessions"), ("runn", "run")])
def test_a_word_like_a_command_misspelt_is_refused_naming_it(
    launched: list[dict[str, Any]], word: str, command: str
) -> None:
    result = invoke(word, "list")
    assert result.exit_code == 2 and not launched
    assert f"no command '{word}' (did you mean {command}?); to send it as the first prompt: " in (
        result.output
    )


def test_no_command_is_ever_taken_for_a_prompt(launched: list[dict[str, Any]]) -> None:
    group = cli
    ctx = group.make_context("dsh", [])
    for name in COMMANDS:
        resolved, command, _ = group.resolve_command(ctx, [name])
        assert resolved == name and command is not None and command.name == name
    assert not launched


def test_print_is_run_with_its_options() -> None:
    as_run = main.as_run
    assert as_run(["-p", "hi", "--json"]) == ["run", "hi", "--json"]
    assert as_run(["--model", "m", "--print", "hi"]) == ["run", "--model", "m", "hi"]
    assert as_run(["fix it", "-p"]) == ["run", "fix it"]
    assert as_run(["run", "explain -p", "-p"]) == ["run", "explain -p", "-p"]  # run's own
    assert as_run(["--", "-p"]) == ["--", "-p"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(tmp_path / "home")
    return environ


def test_dsh_p_runs_the_prompt_headless(tmp_path: Path, env: dict[str, str]) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "headless answer"}, {"text": "second"}]))
    for args in (["-p", "hi", "--script", str(script)], ["--script", str(script), "-p", "hi"]):
        done = subprocess.run(
            [DSH, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0] in ("headless answer", "second")
        assert done.stderr.startswith("session: ")


def test_dsh_prompt_without_a_terminal_is_the_uis_refusal_not_an_unknown_command(
    tmp_path: Path, env: dict[str, str]
) -> None:
    done = subprocess.run(
        [DSH, "fix the bug"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("dsh: error: the terminal UI reads keys from stdin, which is")
