"""``dsh`` (the terminal UI) takes the route flags of ``dsh run`` (``dsh.cli.options``);
``--base-url`` alone means an OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import dsh.cli.tui
from dsh.cli.main import cli
from dsh.cli.options import RouteFlags


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def launch(resume: Any, new: bool, workspace_dir: Any = None, **kwargs: Any) -> None:
        calls.append({"resume": resume, "workspace_dir": workspace_dir, **kwargs})

    monkeypatch.setattr(dsh.cli.tui, "launch", launch)
    return calls


def test_dsh_passes_provider_model_base_url_and_script_to_the_ui(launches, tmp_path: Path):
    script = tmp_path / "s.yaml"
    script.write_text("entries: []\n")
    args = ["--provider", "scripted", "--model", "m", "--script", str(script)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    (call,) = launches
    flags = call["route_flags"]
    assert flags.overrides()["provider"] == {"name": "scripted", "model": "m"}
    assert flags.script == script


def test_path_flags_reach_the_ui_as_paths_and_are_checked(launches, tmp_path: Path):
    script = tmp_path / "s.yaml"
    script.write_text("entries: []\n")
    result = CliRunner().invoke(cli, ["--cwd", str(tmp_path), "--script", str(script)])
    assert result.exit_code == 0, result.output
    (call,) = launches
    assert type(call["workspace_dir"]) is type(tmp_path) and call["workspace_dir"] == tmp_path
    given = call["route_flags"].script
    assert type(given) is type(script) and given == script
    missing = CliRunner().invoke(cli, ["--cwd", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    a_directory = CliRunner().invoke(cli, ["--script", str(tmp_path)])
    assert a_directory.exit_code == 2 and "is a directory" in a_directory.output
    assert len(launches) == 1


def test_dsh_base_url_alone_means_an_openai_compatible_server(launches):
    result = CliRunner().invoke(cli, ["--base-url", "http://localhost:11434/v1"])
    assert result.exit_code == 0, result.output
    assert launches[0]["route_flags"].overrides()["provider"] == {
        "name": "openai-compatible",
        "base_url": "http://localhost:11434/v1",
    }


def test_ui_flags_before_a_command_are_a_usage_error_naming_them(launches):
    result = CliRunner().invoke(cli, ["--provider", "scripted", "sessions", "list"])
    assert result.exit_code == 2 and "give the flags after the command" in result.output
    assert "--provider before a command open the terminal UI" in result.output
    args = ["--resume", "x", "--compaction", "basic", "--summarizer", "extractive", "run", "hi"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "--resume, --compaction, --summarizer before a command" in result.output
    result = CliRunner().invoke(cli, ["--provider", "replay", "sessions", "list"])
    assert result.exit_code == 2, result.output
    assert "--provider before a command open the terminal UI" in result.output  # not --replay's
    assert launches == []


def test_route_flags_keep_an_explicit_provider_and_drop_unset_flags():
    assert RouteFlags().overrides() == {"provider": {}, "compaction": {}}
    assert RouteFlags(provider="deepseek", base_url="http://proxy/v1").overrides()["provider"] == {
        "name": "deepseek",
        "base_url": "http://proxy/v1",
    }
    assert RouteFlags(base_url="http://x/v1", context_window=4096).overrides()["provider"] == {
        "name": "openai-compatible",
        "base_url": "http://x/v1",
        "context_window": 4096,
    }
    assert RouteFlags(replay="ID").overrides()["provider"] == {"name": "replay"}


def test_help_says_resume_without_an_id_opens_a_picker_of_every_session():
    result = CliRunner().invoke(cli, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    (line,) = [line for line in result.output.splitlines() if "--resume" in line]
    assert "with no ID, a picker of every session, from all workspaces" in line
    assert "(not in a terminal: the one used last here)" in line
