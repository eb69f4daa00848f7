"""A first run with no provider chosen takes the one whose key is set (``ANTHROPIC_API_KEY``
alone: anthropic), said in one warning; with several keys set the missing key's error names
them with ``--provider``; whatever names the route wins, and a resumed session keeps its own."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import dsh.llm.anthropic
from dsh.cli.main import cli
from dsh.cli.options import RouteFlags
from dsh.cli.tui import _opening
from dsh.config import load_settings
from dsh.config.provider_keys import DEFAULT_PROVIDER, KEY_VARIABLES
from dsh.llm.registry import KNOWN_PROVIDERS
from dsh.store import JsonlStore
from tests.helpers import run_session_id
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, anthropic_text

KEYS = ("DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
ANTHROPIC_KEY = "sk-ant-of-the-user-0123456789"
CHOSEN = (
    "no provider chosen and DEEPSEEK_API_KEY is not set: using anthropic, as ANTHROPIC_API_KEY "
    "is set (to choose, pass --provider or set provider.name in $DSH_HOME/config.toml)"
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in os.environ if n.startswith("DSH_")]:
        monkeypatch.delenv(name)
    home = tmp_path / "home"
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def environ(home: Path, **keys: str) -> dict[str, str]:
    return {"DSH_HOME": str(home), **keys}


def test_the_keys_that_choose_a_provider_are_the_registrys() -> None:
    assert {name: KNOWN_PROVIDERS[name].key_env for name in KEY_VARIABLES} == KEY_VARIABLES
    assert load_settings(environ={"DSH_HOME": "/nonexistent"}).provider.name == DEFAULT_PROVIDER


@pytest.mark.parametrize(
    ("keys", "chosen"),
    [
        ({"ANTHROPIC_API_KEY": "a"}, "anthropic"),
        ({"OPENAI_API_KEY": "o"}, "openai"),
        ({"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}, "deepseek"),  # several: none
        ({"DEEPSEEK_API_KEY": "d", "ANTHROPIC_API_KEY": "a"}, "deepseek"),  # the default's
        ({"ANTHROPIC_API_KEY": ""}, "deepseek"),  # an empty variable is no key
        ({}, "deepseek"),
    ],
)
def test_a_new_sessions_provider_is_the_one_whose_key_is_set(
    home: Path, keys: dict[str, str], chosen: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="dsh.config"):
        settings = load_settings(environ=environ(home, **keys), choose_provider=True)
    assert settings.provider.name == chosen
    said = [r.getMessage() for r in caplog.records if "no provider chosen" in r.getMessage()]
    assert len(said) == (chosen != "deepseek")
    if chosen == "anthropic":
        assert said == [CHOSEN]
    # only a face starting a new session asks: the others read the settings as they are
    assert load_settings(environ=environ(home, **keys)).provider.name == "deepseek"


@pytest.mark.parametrize(
    ("named", "overrides"),
    [
        ({"DSH_PROVIDER_NAME": "deepseek"}, {}),
        ({"DSH_PROVIDER_MODEL": "deepseek-reasoner"}, {}),
        ({"DSH_PROVIDER_API_KEY_ENV": "MY_KEY"}, {}),
        ({}, {"provider": {"name": "deepseek"}}),
        ({}, {"provider": {"name": "openai-compatible", "base_url": "http://127.0.0.1:1/v1"}}),
    ],
)
def test_whatever_names_the_route_wins_over_the_keys_set(
    home: Path, named: dict[str, str], overrides: dict[str, Any]
) -> None:
    env = environ(home, ANTHROPIC_API_KEY="a", **named)
    settings = load_settings(environ=env, overrides=overrides, choose_provider=True)
    assert settings.provider.name != "anthropic"


def test_a_config_files_provider_wins_over_the_keys_set(home: Path) -> None:
    home.mkdir()
    (home / "config.toml").write_text('[provider]\nmodel = "deepseek-chat"\n')
    env = environ(home, ANTHROPIC_API_KEY="a")
    assert load_settings(environ=env, choose_provider=True).provider.name == "deepseek"


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_dsh_run_with_only_an_anthropic_key_runs_on_anthropic(
    home: Path,
    server: FakeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setattr(dsh.llm.anthropic, "ANTHROPIC_API_URL", server.url)
    server.queue(anthropic_text("hello from claude"))
    with caplog.at_level(logging.WARNING, logger="dsh.config"):
        result = CliRunner().invoke(cli, ["run", "hi"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "hello from claude"
    assert [r.getMessage() for r in caplog.records].count(CHOSEN) == 1
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["authorization"] == f"Bearer {ANTHROPIC_KEY}"  # off Anthropic's host
    assert request.body["model"] == KNOWN_PROVIDERS["anthropic"].default_model
    # the session records its route: reopened with another key set, it stays on anthropic
    session_id = run_session_id(result.stderr)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    again = CliRunner().invoke(cli, ["run", "--session", session_id, "more"])
    assert again.exit_code == 2
    assert "no API key for anthropic: set ANTHROPIC_API_KEY" in again.stderr
    assert JsonlStore(home).list()  # the first session is kept


def test_dsh_run_with_several_keys_set_names_them_and_provider(home: Path) -> None:
    env = {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}
    result = CliRunner(env=env).invoke(cli, ["run", "hi"])
    assert result.exit_code == 2
    assert result.stderr == (
        "dsh: error: no API key for deepseek: set DEEPSEEK_API_KEY, or choose a provider whose "
        "key is set: --provider openai (OPENAI_API_KEY) or --provider anthropic "
        "(ANTHROPIC_API_KEY)\n"
    )


def test_an_explicit_provider_without_its_key_is_refused_naming_the_keys_set(home: Path) -> None:
    result = CliRunner(env={"ANTHROPIC_API_KEY": "a"}).invoke(
        cli, ["run", "--provider", "deepseek", "hi"]
    )
    assert result.exit_code == 2
    assert (
        "set DEEPSEEK_API_KEY, or choose a provider whose key is set: --provider anthropic ("
        in (result.stderr)
    )


def test_the_terminal_ui_opens_a_new_session_on_the_provider_whose_key_is_set(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    store = JsonlStore(home)
    _, settings, _, _ = _opening(store, None, None, {}, RouteFlags())
    assert settings.provider.name == "openai"
    _, settings, _, _ = _opening(
        store, None, None, {"provider": {"name": "anthropic"}}, RouteFlags()
    )
    assert settings.provider.name == "anthropic"  # a flag wins


def test_dsh_webs_new_sessions_take_the_provider_whose_key_is_set(
    home: Path, tmp_path: Path
) -> None:
    from dsh.web.workspace_settings import WorkspaceSettings

    workspace = tmp_path / "ws"
    workspace.mkdir()
    read = WorkspaceSettings(environ=environ(home, ANTHROPIC_API_KEY="a"))
    assert read(str(workspace)).provider.name == "anthropic"
    flagged = WorkspaceSettings({"provider": {"name": "openai"}}, environ=environ(home))
    assert flagged(str(workspace)).provider.name == "openai"
