"""``dsh`` (the terminal UI) takes every route flag ``dsh run`` takes (``dsh.cli.options``), and
each reaches the session as the same key in ``config.toml`` would: the command line parsed by
the real ``cli``, then the real app (driven by its pilot) runs a turn and records its settings.
``--replay`` serves the recorded session's answers, starting from its recorded settings.

The flag sets of the three faces are compared in ``tests/cli/test_route_flags.py``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

import dsh.tui
from dsh.cli import tui as cli_tui
from dsh.cli.main import cli
from dsh.events import SessionSettings, SessionSettingsEvent
from dsh.llm.replay import ReplayProvider
from dsh.tui import DshApp, TuiOptions
from tests.cli.route_flag_values import CONFIG, FLAGS, has_the_flag_values
from tests.tui.conftest import SIZE, run_prompt, settle
from tests.tui.test_pilot import text_of


class UI:
    """``dsh ARGS`` parsed by the real command line; ``launch`` builds the app's options,
    which the test then runs in the real app under its pilot."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        self.script = tmp_path / "s.json"
        self.script.write_text(json.dumps([{"text": "first answer"}, {"text": "more"}]))
        self.monkeypatch = monkeypatch
        self.built: list[TuiOptions] = []
        monkeypatch.chdir(self.workspace)
        monkeypatch.setattr(cli_tui, "refuse_without_terminal", lambda: None)  # pytest has none
        built = self.built

        class Built:
            """Stands in for the app while ``launch`` runs: keeps the options it was given."""

            return_code = 0
            last_session_id = None

            def __init__(self, options: TuiOptions, **_: Any) -> None:
                built.append(options)

            def run(self) -> None:
                pass

        monkeypatch.setattr(dsh.tui, "DshApp", Built)

    def home(self, home: Path) -> None:
        self.monkeypatch.setenv("DSH_HOME", str(home))

    def options(self, *args: str) -> TuiOptions:
        result = CliRunner().invoke(cli, list(args))
        assert result.exit_code == 0, result.output
        return self.built[-1]

    def turn(self, options: TuiOptions, prompt: str) -> tuple[str, list[SessionSettings]]:
        """Run ``prompt`` in the real app on ``options``: the transcript's text and the
        settings the session recorded."""
        app = DshApp(options)

        async def main() -> tuple[str, list[SessionSettings]]:
            async with app.run_test(size=SIZE) as pilot:
                await settle(pilot, lambda: app.ready)
                await run_prompt(pilot, prompt)
                session = app.controller.session
                assert session is not None
                recorded = [e.data for e in session.events if isinstance(e, SessionSettingsEvent)]
                return text_of(app), recorded

        return asyncio.run(main())


@pytest.fixture
def ui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> UI:
    return UI(tmp_path, monkeypatch)


def test_dsh_route_flags_reach_the_session_as_their_config_keys_would(
    ui: UI, tmp_path: Path
) -> None:
    ui.home(tmp_path / "flags")
    by_flags = ui.options("--script", str(ui.script), *FLAGS)
    text, [recorded] = ui.turn(by_flags, "hi")
    assert "first answer" in text
    config_home = tmp_path / "config"
    config_home.mkdir()
    (config_home / "config.toml").write_text(CONFIG)
    ui.home(config_home)
    by_config = ui.options("--script", str(ui.script))
    assert by_config.settings == by_flags.settings
    _, [from_config] = ui.turn(by_config, "hi")
    assert recorded == from_config
    assert has_the_flag_values(msgspec.to_builtins(recorded))  # as the log spells it


def test_dsh_replay_serves_a_recorded_session_from_its_recorded_settings(
    ui: UI, tmp_path: Path
) -> None:
    ui.home(tmp_path / "home")
    recording = ui.options("--script", str(ui.script), "--context-window", "30000")
    ui.turn(recording, "hi")
    [recorded_id] = [header.id for header in recording.store.list()]

    options = ui.options("--replay", recorded_id[:-3], "--compaction", "basic")
    route = options.route_factory(None)
    assert isinstance(route.provider, ReplayProvider) and route.context_window == 30_000
    text, [recorded] = ui.turn(options, "hi again")
    assert "first answer" in text  # the recording's answer, served again
    assert (recorded.provider, recorded.context_window) == ("replay", 30_000)
    assert recorded.compaction.backend == "basic"
    assert len(options.store.list()) == 2  # a new session: the recording is left as it was
