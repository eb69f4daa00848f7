"""The route flags are one definition (``dsh.cli.options``) that the three faces share:
``dsh`` (the terminal UI), ``dsh run`` and ``dsh web`` take the same flags, with the same help,
type and checks. Each face's other flags are listed here, so a flag added to one face alone
fails a test, and the faces cannot drift apart again.

Through ``dsh run`` (a real process), each flag reaches the session as the same key in the
config file would: the settings the session records are the same either way. The terminal UI's
and the web's own tests: ``tests/tui/test_route_flags_tui.py``,
``tests/web/test_web_route_flags.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from dsh.cli.main import cli, load_command
from tests.cli.route_flag_values import CONFIG, FLAGS, has_the_flag_values
from tests.helpers import run_session_id

DSH = str(Path(sys.executable).with_name("dsh"))

ROUTE_FLAGS = {
    "--provider",
    "--model",
    "--base-url",
    "--script",
    "--replay",
    "--context-window",
    "--compaction",
    "--summarizer",
    "--summarizer-base-url",
}
"""What every face that starts a model route takes."""

APPROVAL_FLAGS = {"--yes", "--allow"}
"""The approval flags every such face takes too (``tests/cli/test_approval_flags.py``)."""

OWN_FLAGS = {
    "dsh": {"--version", "--resume", "--continue", "-c", "--cwd", "--help", "-p", "--print"},
    "run": {
        "--session",
        "--continue",
        "-c",
        "--cwd",
        "--prompts-file",
        "--json",
        "--json-stream",
        "--max-steps",
        "--help",
    },
    "web": {"--host", "--port", "--no-open", "--token", "--help"},
}
"""Each face's flags that are not route flags: a new flag goes here or in every face."""


def face(name: str) -> click.Command:
    return cli if name == "dsh" else load_command(name)


def options_of(command: click.Command) -> dict[str, click.Parameter]:
    """Every option of ``command`` by each of its spellings (``--help`` included)."""
    params = command.get_params(click.Context(command))
    return {
        spelling: param
        for param in params
        if isinstance(param, click.Option)
        for spelling in (*param.opts, *param.secondary_opts)
    }


@pytest.mark.parametrize("name", sorted(OWN_FLAGS))
def test_each_face_takes_the_route_flags_and_only_its_own_others(name: str) -> None:
    flags = set(options_of(face(name)))
    assert flags - OWN_FLAGS[name] == ROUTE_FLAGS | APPROVAL_FLAGS
    assert OWN_FLAGS[name] <= flags


def test_the_three_faces_define_each_route_flag_alike() -> None:
    """Same name, help, type (choices, path checks), default and check (callback)."""
    faces = {name: options_of(face(name)) for name in OWN_FLAGS}
    for flag in sorted(ROUTE_FLAGS):
        defined = {
            name: (options[flag].to_info_dict(), options[flag].callback)
            for name, options in faces.items()
        }
        assert defined["run"] == defined["dsh"] == defined["web"], flag
    compact = options_of(load_command("compact"))  # its summariser flags are the same too
    for flag in ("--summarizer", "--summarizer-base-url"):
        assert compact[flag].to_info_dict() == faces["run"][flag].to_info_dict()


@pytest.fixture
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No UI opens and no server starts: a refused flag must stop each face before."""
    import dsh.cli.tui
    import dsh.cli.web

    started: list[str] = []
    monkeypatch.setattr(dsh.cli.tui, "launch", lambda *a, **k: started.append("ui"))
    monkeypatch.setattr(dsh.cli.web, "_serve", lambda *a, **k: started.append("web"))
    return started


FACE_ARGS = {"dsh": [], "run": ["run", "hi"], "web": ["web", "--no-open"]}


@pytest.mark.parametrize("name", sorted(FACE_ARGS))
def test_every_face_refuses_a_bad_summarizer_base_url_in_one_line(
    name: str, nothing_starts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path))
    args = [*FACE_ARGS[name][:1], "--summarizer-base-url", "localhost:8080/v1"]
    result = CliRunner().invoke(cli, [*args, *FACE_ARGS[name][1:]])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--summarizer-base-url': must be an http:// or https:// URL" in (
        result.output
    )
    assert nothing_starts == []


@pytest.mark.parametrize("name", sorted(FACE_ARGS))
def test_every_face_refuses_replay_with_another_provider_in_one_line(
    name: str, nothing_starts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path))
    args = [*FACE_ARGS[name][:1], "--replay", "x", "--provider", "openai"]
    result = CliRunner().invoke(cli, [*args, *FACE_ARGS[name][1:]])
    assert result.exit_code == 2, result.output
    assert "dsh: error: --replay serves model calls with --provider replay, not openai" in (
        result.output
    )
    assert nothing_starts == []


@pytest.mark.parametrize("name", sorted(FACE_ARGS))
def test_every_face_refuses_provider_replay_without_replay_at_once_naming_the_flag(
    name: str, nothing_starts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before any setting is read: a config.toml that cannot load is not reached."""
    monkeypatch.setenv("DSH_HOME", str(tmp_path))
    (tmp_path / "config.toml").write_text("[provider\n")
    args = [*FACE_ARGS[name][:1], "--provider", "replay"]
    result = CliRunner().invoke(cli, [*args, *FACE_ARGS[name][1:]])
    assert result.exit_code == 2, result.output
    assert result.output == (
        "dsh: error: --provider replay needs --replay SESSION (the recorded session whose model "
        "calls it serves again)\n"
    )
    assert nothing_starts == []


# ---- dsh run: a flag is its config key ------------------------------------------------------


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    for key in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)
    env["DSH_HOME"] = str(home)
    return env


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


def answered(done: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """``dsh run``'s first answer and its session id."""
    return done.stdout.splitlines()[0], run_session_id(done.stderr)


def write_script(tmp_path: Path) -> Path:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "first answer"}, {"text": "second answer"}]))
    return script


def settings_of(session_id: str, env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    events = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=cwd)
    lines = [json.loads(line) for line in events.stdout.splitlines()]
    return [e["data"] for e in lines if e["type"] == "session/settings"]


def test_run_route_flags_reach_the_session_as_their_config_keys_would(tmp_path: Path) -> None:
    """A session started with every route flag records what one started with the same keys
    in ``config.toml`` records; a reopen with a flag overrides it, said and logged."""
    script = write_script(tmp_path)
    flags_home, config_home = tmp_path / "flags", tmp_path / "config"
    config_home.mkdir()
    (config_home / "config.toml").write_text(CONFIG)
    flags_env, config_env = environment(flags_home), environment(config_home)
    by_flags = dsh("run", "--script", str(script), *FLAGS, "hi", env=flags_env, cwd=tmp_path)
    by_config = dsh("run", "--script", str(script), "hi", env=config_env, cwd=tmp_path)
    (answer, session_id), (_, config_session) = answered(by_flags), answered(by_config)
    assert answer == "first answer"
    [recorded] = settings_of(session_id, flags_env, tmp_path)
    assert [recorded] == settings_of(config_session, config_env, tmp_path)
    assert has_the_flag_values(recorded)

    again = ("--compaction", "recallable", "--summarizer", "extractive", "more")
    reopen = ("run", "--session", session_id, "--script", str(script), *again)
    reopened = dsh(*reopen, env=flags_env, cwd=tmp_path)
    assert answered(reopened) == ("second answer", session_id)
    assert (
        f"session {session_id}: the flags change its recorded settings: compaction.backend "
        "basic -> recallable; compaction.summarizer openai-compatible:qwen -> extractive"
    ) in reopened.stderr
    latest = settings_of(session_id, flags_env, tmp_path)[-1]
    assert (latest["compaction"]["backend"], latest["compaction"]["summarizer"]) == (
        "recallable",
        "extractive",
    )
    assert {"compaction.backend", "compaction.summarizer"} <= set(latest["changed"])


def test_run_replay_takes_a_prefix_and_starts_from_the_recorded_settings(tmp_path: Path) -> None:
    """``--replay`` names the recording as ``--session`` names a session (a unique prefix);
    the new session runs in the recording's window, the flags over its settings."""
    env = environment(tmp_path / "home")
    script = write_script(tmp_path)
    record = ("run", "--script", str(script), "--context-window", "30000", "hi")
    recording = answered(dsh(*record, env=env, cwd=tmp_path))[1]
    replay = ("run", "--replay", recording[:-3], "--compaction", "basic", "hi")
    replayed = dsh(*replay, env=env, cwd=tmp_path)
    answer, session_id = answered(replayed)
    assert answer == "first answer" and session_id != recording
    [recorded] = settings_of(session_id, env, tmp_path)
    assert (recorded["provider"], recorded["contextWindow"]) == ("replay", 30_000)
    assert recorded["compaction"]["backend"] == "basic"
