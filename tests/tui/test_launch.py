"""``dsh.cli.tui.launch``: which session ``dsh`` / ``dsh --resume [ID]`` open."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList

import dsh.tui
import dsh.tui.picker
from dsh.agent import session_settings
from dsh.cli import tui as cli_tui
from dsh.cli.options import RouteFlags
from dsh.config import Settings
from dsh.errors import SessionNotFoundError, UsageError
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.transcript.listing import session_summaries
from dsh.tui import TuiOptions
from dsh.tui.app_warnings import WarningLog
from dsh.tui.picker import PickerApp, SessionPicker
from tests.helpers import writer_in_child_process
from tests.tui.conftest import settle


@pytest.fixture
def launched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Run ``launch`` in a temp home and directory; records the options instead of running."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(workspace)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # `demo --tui`'s copy goes here
    seen: dict[str, Any] = {"store": JsonlStore(home), "cwd": str(workspace.resolve())}

    class FakeApp:
        return_code = 0
        last_session_id: str | None = seen.get("last_session_id")

        def __init__(self, options: TuiOptions, *, warnings: WarningLog | None = None) -> None:
            seen["options"] = options
            seen["warnings"] = warnings

        def run(self) -> None:
            seen["ran"] = True
            workspace = seen["options"].workspace
            seen["files while running"] = sorted(p.name for p in workspace.iterdir())
            if "while running" in seen:  # what a person does in the UI, if the test says
                seen["while running"](seen["options"])
            self.last_session_id = seen.get("last_session_id")
            self.return_code = seen.get("return_code", 0)

    monkeypatch.setattr(dsh.tui, "DshApp", FakeApp)
    monkeypatch.setattr(cli_tui, "refuse_without_terminal", lambda: None)  # pytest has none
    return seen


def make_session(store: JsonlStore, cwd: str) -> str:
    session = Session.create(store, cwd=cwd)
    session.close()
    return session.id


def test_plain_dsh_starts_a_new_session_in_the_current_directory(launched):
    cli_tui.launch(None, False)
    options = launched["options"]
    assert options.resume is None and str(options.workspace) == launched["cwd"]


def test_resume_without_an_id_opens_this_directorys_latest_session(launched):
    store = launched["store"]
    make_session(store, "/somewhere/else")
    older = make_session(store, launched["cwd"])
    newer = make_session(store, launched["cwd"])
    make_session(store, "/somewhere/else")
    assert older != newer
    cli_tui.launch("", False)
    assert launched["options"].resume == newer


def used_later(store: JsonlStore, session_id: str) -> None:
    """Open ``session_id`` again and log something in it: it is now the one used last."""
    from tests.helpers import append_chat_turn

    session = Session.open(store, session_id, writable=True)
    session._clock = lambda: 2**42  # later than every session made before, whatever the clock
    append_chat_turn(session, "one more thing", "done")
    session.close()


def test_continue_opens_the_session_used_last_here_not_the_newest_created(launched):
    store = launched["store"]
    older = make_session(store, launched["cwd"])
    make_session(store, launched["cwd"])
    make_session(store, "/somewhere/else")
    used_later(store, older)
    cli_tui.launch(None, False, last=True)
    assert launched["options"].resume == older


def test_continue_with_no_session_here_says_so_and_with_resume_is_refused(launched):
    make_session(launched["store"], "/somewhere/else")
    with pytest.raises(SessionNotFoundError, match="no session to continue in"):
        cli_tui.launch(None, False, last=True)
    with pytest.raises(UsageError, match="--continue and --resume"):
        cli_tui.launch("", False, last=True)


def test_resume_without_an_id_in_a_terminal_opens_the_session_picked(launched, monkeypatch):
    import dsh.tui.picker

    other = make_session(launched["store"], launched["cwd"])
    make_session(launched["store"], launched["cwd"])
    offered: list[str] = []
    logs: list[WarningLog] = []

    def pick(store, warnings, refuse):
        offered.extend(h.id for h in store.list())
        logs.append(warnings)
        return other

    monkeypatch.setattr(cli_tui, "interactive", lambda: True)
    monkeypatch.setattr(dsh.tui.picker, "pick_session", pick)
    cli_tui.launch("", False)
    assert launched["options"].resume == other and len(offered) == 2
    assert launched["warnings"] is logs[0]  # what the picker showed, the UI's /warnings lists


def test_closing_the_picker_without_a_choice_opens_nothing(launched, monkeypatch, capsys):
    import dsh.tui.picker

    make_session(launched["store"], launched["cwd"])
    monkeypatch.setattr(cli_tui, "interactive", lambda: True)
    monkeypatch.setattr(dsh.tui.picker, "pick_session", lambda store, warnings, refuse: None)
    cli_tui.launch("", False)
    assert "options" not in launched and "no session chosen" in capsys.readouterr().out


def test_quitting_says_how_to_resume_the_session(launched, capsys):
    launched["last_session_id"] = "20261202-010203-456-abcdef"
    cli_tui.launch(None, False)
    out = capsys.readouterr().out
    assert out.strip() == "resume with: dsh --resume 20261202-010203-456-abcdef"


def test_quitting_after_a_keyless_run_repeats_its_script_or_replay_in_the_hint(
    launched, tmp_path, capsys
):
    """A session records its route, not the script or recording that fed it: ``dsh --resume
    ID`` alone would ask for them again."""
    (tmp_path / "ws" / "s.json").write_text('[{"text": "hi"}]')
    launched["last_session_id"] = "20261202-010203-456-abcdef"
    cli_tui.launch(None, False, route_flags=RouteFlags(script=Path("s.json")))
    assert capsys.readouterr().out.strip() == (
        "resume with: dsh --resume 20261202-010203-456-abcdef --script "
        f"{tmp_path.resolve() / 'ws' / 's.json'}"
    )
    recording = make_session(launched["store"], launched["cwd"])
    cli_tui.launch(None, False, route_flags=RouteFlags(replay=recording[:-3]))
    assert capsys.readouterr().out.strip() == (
        f"resume with: dsh --resume 20261202-010203-456-abcdef --replay {recording}"
    )


def test_resume_takes_an_id_or_a_unique_prefix(launched, tmp_path):
    (tmp_path / "other").mkdir()
    session_id = make_session(launched["store"], str(tmp_path / "other"))
    cli_tui.launch(session_id[:-3], False)
    assert launched["options"].resume == session_id


def test_a_resumed_session_keeps_its_own_workspace_unless_cwd_says_so(launched, tmp_path):
    """``dsh --resume ID`` from another directory must not retarget the agent silently."""
    other = tmp_path / "other"
    other.mkdir()
    session_id = make_session(launched["store"], str(other))
    cli_tui.launch(session_id, False)
    assert launched["options"].workspace == other.resolve()
    here = Path(launched["cwd"])
    cli_tui.launch(session_id, False, here)
    assert launched["options"].workspace == here
    events = Session.open(launched["store"], session_id).events
    moves = [e.data for e in events if type(e).__name__ == "SessionWorkspaceEvent"]
    assert [(m.cwd, m.recorded) for m in moves] == [(str(here), str(other))]


def test_resuming_a_session_whose_workspace_is_gone_needs_cwd(launched):
    session_id = make_session(launched["store"], "/no/such/dir")
    with pytest.raises(UsageError, match="--cwd"):
        cli_tui.launch(session_id, False)
    cli_tui.launch(session_id, False, Path(launched["cwd"]))
    assert launched["options"].resume == session_id


def test_resume_errors_are_raised_before_the_ui_starts(launched):
    with pytest.raises(SessionNotFoundError):
        cli_tui.launch("", False)
    with pytest.raises(SessionNotFoundError):
        cli_tui.launch("nope", False)
    with pytest.raises(UsageError):
        cli_tui.launch("x", True)
    assert "options" not in launched


def test_provider_flags_reach_the_ui_and_a_script_feeds_the_scripted_model(launched, tmp_path):
    script = tmp_path / "s.json"
    script.write_text('[{"text": "scripted hello"}]')
    flags = RouteFlags(provider="scripted", model="mine", script=script)
    cli_tui.launch(None, False, route_flags=flags)
    options = launched["options"]
    assert options.settings.provider.name == "scripted"
    route = options.route_factory(None)
    assert type(route.provider).__name__ == "ScriptedProvider" and route.model == "mine"
    assert options.route_factory("other").model == "other"  # /model still switches


def test_a_scripted_provider_without_a_script_is_a_config_error_before_the_ui(launched):
    from dsh.errors import ConfigError

    cli_tui.launch(None, False, route_flags=RouteFlags(provider="scripted"))
    with pytest.raises(ConfigError, match="--script FILE"):
        launched["options"].route_factory(None)


def test_demo_tui_opens_the_ui_on_a_throwaway_copy_answered_by_the_demo_script(launched):
    from click.testing import CliRunner

    from dsh.cli.demo import demo
    from dsh.demo import PROMPTS

    result = CliRunner().invoke(demo, ["--tui"])
    assert result.exit_code == 0, result.output
    options = launched["options"]
    assert "calc.py" in launched["files while running"]
    assert str(options.workspace) != launched["cwd"]
    route = options.route_factory(None)
    assert type(route.provider).__name__ == "ScriptedProvider" and route.model == "demo"
    assert options.greeting is not None and PROMPTS[0] in options.greeting


def test_resume_reopens_on_the_recorded_route_and_a_flag_overrides_it(launched, tmp_path):
    from dsh.agent import session_settings
    from dsh.config import Settings

    store = launched["store"]
    with Session.create(store, cwd=launched["cwd"]) as session:
        recorded = session_settings.snapshot(Settings(), "scripted", "m1", 16_000, launched["cwd"])
        session_settings.record(session, recorded)
        session_id = session.id
    script = tmp_path / "s.json"
    script.write_text('[{"text": "hi"}]')
    cli_tui.launch(session_id, False, route_flags=RouteFlags(script=script))  # config: deepseek
    options = launched["options"]
    assert (options.settings.provider.name, options.settings.provider.context_window) == (
        "scripted",
        16_000,
    )
    route = options.route_factory(None)
    assert (route.model, route.context_window) == ("m1", 16_000)
    cli_tui.launch(session_id, False, route_flags=RouteFlags(model="m2", script=script))
    options = launched["options"]
    assert options.route_factory(None).model == "m2" and options.overrides["provider"] == {
        "name": "scripted",  # --script: what answers is named, as the session records it
        "model": "m2",
    }


def test_resume_of_a_window_recorded_under_the_bound_opens_in_the_configured_one_said_by_the_ui(
    launched, tmp_path, caplog
):
    import logging

    from dsh.agent import session_settings
    from dsh.config import Settings

    store = launched["store"]
    with Session.create(store, cwd=launched["cwd"]) as session:  # as an older dsh recorded it
        recorded = session_settings.snapshot(Settings(), "scripted", "m1", 512, launched["cwd"])
        session_settings.record(session, recorded)
        session_id = session.id
    script = tmp_path / "s.json"
    script.write_text('[{"text": "hi"}]')
    caplog.set_level(logging.WARNING, logger="dsh")
    cli_tui.launch(session_id, False, route_flags=RouteFlags(script=script))
    options = launched["options"]
    assert options.settings.provider.context_window is None  # the configured window, not 512
    assert options.route_factory(None).context_window == 128_000
    # not printed before the UI takes the terminal (it would be hidden until it quits): the UI
    # says it as it opens the session (tests/tui/test_session_settings_tui.py)
    assert not [r for r in caplog.records if "no longer valid" in r.getMessage()]


def test_demo_tui_runs_in_the_small_window_that_makes_it_compact(launched):
    from click.testing import CliRunner

    from dsh.cli.demo import demo
    from dsh.demo import DEMO_OVERRIDES, DEMO_WINDOW, PROMPTS

    assert CliRunner().invoke(demo, ["--tui"]).exit_code == 0
    options = launched["options"]
    assert options.route_factory(None).context_window == DEMO_WINDOW
    chunk = DEMO_OVERRIDES["compaction"]["chunk_tokens"]
    assert options.settings.compaction.chunk_tokens == chunk
    assert all(prompt in options.greeting for prompt in PROMPTS)


def demo_copies(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.glob("dsh-demo-*"))


@pytest.mark.parametrize("return_code", [0, 1])
def test_demo_tui_removes_its_throwaway_copy_when_the_ui_quits(launched, tmp_path, return_code):
    from click.testing import CliRunner

    from dsh.cli.demo import demo

    launched["return_code"] = return_code  # a UI that ended with an error code too
    result = CliRunner().invoke(demo, ["--tui"])
    assert result.exit_code == return_code, result.output
    workspace = launched["options"].workspace
    assert launched["files while running"] == ["calc.py", "test_calc.py"]
    assert workspace.parent == tmp_path and not workspace.exists()
    assert demo_copies(tmp_path) == []
    assert str(workspace) not in result.output  # nothing is said of a copy that is gone
    assert "removed when you quit (--keep keeps it)" in launched["options"].greeting


def test_demo_tui_with_keep_keeps_its_copy_and_says_where(launched, tmp_path):
    from click.testing import CliRunner

    from dsh.cli.demo import demo

    result = CliRunner().invoke(demo, ["--tui", "--keep"])
    assert result.exit_code == 0, result.output
    workspace = launched["options"].workspace
    assert demo_copies(tmp_path) == [workspace]
    assert sorted(p.name for p in workspace.iterdir()) == ["calc.py", "test_calc.py"]
    assert result.output.splitlines()[-1] == f"workspace: {workspace}"
    assert "kept when you quit" in launched["options"].greeting


def session_in_the_demo(launched: dict[str, Any]) -> None:
    """While the (stand-in) UI runs, a session of the demo is made in its workspace, as typing
    a prompt there makes one: it records the demo's settings and route."""
    from dsh.agent.session_runner import record_settings

    def make(options: TuiOptions) -> None:
        with Session.create(options.store, cwd=str(options.workspace)) as session:
            record_settings(session, options.settings, options.route_factory(None))
            launched["last_session_id"] = session.id

    launched["while running"] = make


def test_demo_tui_says_where_its_transcript_is_not_how_to_resume_its_removed_copy(launched):
    from click.testing import CliRunner

    from dsh.cli.demo import demo
    from dsh.cli.main import cli

    session_in_the_demo(launched)
    result = CliRunner().invoke(demo, ["--tui"])
    assert result.exit_code == 0, result.output
    session_id = launched["last_session_id"]
    assert result.output.splitlines() == [f"the transcript: dsh sessions show {session_id}"]
    shown = CliRunner().invoke(cli, ["sessions", "show", session_id])
    assert shown.exit_code == 0, shown.output
    with pytest.raises(UsageError, match="no longer a directory"):  # why no resume is offered
        cli_tui.launch(session_id, False)


def test_demo_tui_with_keep_says_how_to_resume_and_that_command_opens_the_kept_session(launched):
    import shlex

    from click.testing import CliRunner

    from dsh.cli.demo import demo
    from dsh.cli.main import cli
    from dsh.demo import DEMO_WINDOW

    session_in_the_demo(launched)
    result = CliRunner().invoke(demo, ["--tui", "--keep"])
    assert result.exit_code == 0, result.output
    session_id, kept = launched["last_session_id"], launched["options"].workspace
    [hint] = [line for line in result.output.splitlines() if line.startswith("resume with: ")]
    assert f"the transcript: dsh sessions show {session_id}" in result.output.splitlines()
    program, *args = shlex.split(hint.removeprefix("resume with: "))
    del launched["while running"]
    assert program == "dsh"
    resumed = CliRunner().invoke(cli, args)
    assert resumed.exit_code == 0, resumed.output
    options = launched["options"]
    assert (options.resume, options.workspace) == (session_id, kept)
    route = options.route_factory(None)
    assert type(route.provider).__name__ == "ScriptedProvider"
    assert (route.model, route.context_window) == ("demo", DEMO_WINDOW)


def test_a_picked_session_that_needs_its_script_keeps_the_real_picker_open(
    launched, monkeypatch, tmp_path
):
    """``dsh --resume``'s picker, driven by its pilot, over a session recorded on the scripted
    provider (as ``dsh run --script`` leaves one) and one that opens: choosing the scripted
    one without ``--script`` says why in the picker, which stays; the other then opens. With
    ``--script`` the scripted one opens."""
    store = launched["store"]
    with Session.create(store, cwd=launched["cwd"]) as session:
        recorded = session_settings.snapshot(Settings(), "scripted", "m1", 16_000, launched["cwd"])
        session_settings.record(session, recorded)
        scripted = session.id
    opens = make_session(store, launched["cwd"])
    said: list[str] = []

    def pick(store, warnings, refuse):
        app = PickerApp(session_summaries(store), warnings=warnings, refuse=refuse)

        async def main() -> None:
            async with app.run_test(size=(120, 30)) as pilot:
                await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
                picker = app.screen
                refused = picker.query_one("#picker-refused")
                await pilot.press(*scripted[-6:], "enter")  # filtered down to it, chosen
                await settle(pilot, lambda: refused.display)
                said.append(str(refused.render()))
                assert app.screen is picker and app.is_running
                for _ in range(6):
                    await pilot.press("backspace")
                await pilot.press(*opens[-6:], "enter")

        asyncio.run(main())
        return app.return_value

    monkeypatch.setattr(cli_tui, "interactive", lambda: True)
    monkeypatch.setattr(dsh.tui.picker, "pick_session", pick)
    cli_tui.launch("", False)
    assert said == [
        f"session {scripted} cannot be opened: the scripted provider needs --script FILE — "
        "choose another, or esc"
    ]
    assert launched["options"].resume == opens
    script = tmp_path / "s.json"
    script.write_text('[{"text": "hi"}]')
    refused_with_script = cli_tui._cannot_open(
        store, scripted, None, None, RouteFlags(script=script)
    )
    assert refused_with_script is None


def test_a_picked_session_whose_workspace_is_gone_is_refused_in_the_picker(launched, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    session_id = make_session(launched["store"], str(gone))
    gone.rmdir()
    why = cli_tui._cannot_open(launched["store"], session_id, None, None, RouteFlags())
    assert why is not None and "which is no longer a directory; pass --cwd DIR" in why
    assert cli_tui._cannot_open(launched["store"], session_id, tmp_path, None, RouteFlags()) is None


def test_a_session_resumed_from_another_directory_tells_the_ui_where_dsh_was_started(
    launched, tmp_path
):
    """The UI says where tools run (``dsh.tui.workspace_shown``) when that is not here."""
    other = tmp_path / "other"
    other.mkdir()
    here = Path(launched["cwd"])
    session_id = make_session(launched["store"], str(other))
    cli_tui.launch(session_id, False)
    options = launched["options"]
    assert (options.started_in, options.workspace_from_flag) == (here, False)
    cli_tui.launch(session_id, False, other)  # --cwd elsewhere
    options = launched["options"]
    assert (options.workspace, options.started_in, options.workspace_from_flag) == (
        other.resolve(),
        here,
        True,
    )
    cli_tui.launch(session_id, False, here)  # --cwd here: tools run here
    assert launched["options"].started_in is None
    mine = make_session(launched["store"], str(here))
    cli_tui.launch(mine, False)
    assert launched["options"].started_in is None
    cli_tui.launch(None, False, other)  # a new session: its --cwd was just typed
    assert launched["options"].started_in is None


def test_a_picked_session_another_process_holds_is_refused_in_the_picker_naming_it(
    launched, monkeypatch
):
    """``dsh --resume``'s picker, driven by its pilot, while a second process (labelled as a
    ``dsh web``) holds one session for writing: its row is marked busy as the picker opens;
    choosing it says who holds it and what lets it go, and the picker stays (dsh used to go on
    and exit, the UI refused the lock); the other session then opens."""
    store = launched["store"]
    held = make_session(store, launched["cwd"])
    opens = make_session(store, launched["cwd"])
    said: list[str] = []

    def drive(app: PickerApp) -> None:
        async def main() -> None:
            async with app.run_test(size=(120, 30)) as pilot:
                await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
                picker = app.screen
                options = picker.query_one(OptionList)
                prompts = {
                    str(options.get_option_at_index(i).id): str(
                        options.get_option_at_index(i).prompt
                    )
                    for i in range(options.option_count)
                }
                said.append(str(picker.query_one("#picker-title").render()))
                said.extend(prompts[i].split("  ")[0] for i in (held, opens))
                assert picker.query_one("#picker-busy").display
                refused = picker.query_one("#picker-refused")
                await pilot.press(*held[-6:], "enter")  # filtered down to it, chosen
                await settle(pilot, lambda: refused.display)
                said.append(str(refused.render()))
                assert app.screen is picker and app.is_running
                for _ in range(6):
                    await pilot.press("backspace")
                await pilot.press(*opens[-6:], "enter")

        asyncio.run(main())

    monkeypatch.setattr(PickerApp, "run", lambda app: (drive(app), app.return_value)[1])
    monkeypatch.setattr(cli_tui, "interactive", lambda: True)
    with writer_in_child_process(store.home, "jsonl", held, ["dsh", "web"]) as pid:
        cli_tui.launch("", False)
    assert said == [
        "Resume a session: type to filter, enter opens, esc closes (2 sessions, 1 busy)",
        "(no prompt yet) (busy)",
        "(no prompt yet)",
        f"session {held} cannot be opened: it is open for writing by process {pid} (dsh web), "
        "which holds it until that server stops: go on in its page, or stop that `dsh web` "
        "(Ctrl-C where it runs) — choose another, or esc",
    ]
    assert launched["options"].resume == opens
