"""The approval mode in the terminal UI: ``dsh --yes`` / ``--allow`` start the app with it,
``/approval`` names it or changes it for the rest of the run (not the config, not the session's
record), and the status bar shows it whenever it is not ``ask``. Driven by the real app's pilot
(and, for the flags, the real command line)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button

from dsh.events import event_type_of
from dsh.tui import DshApp
from dsh.tui.approval import ApprovalScreen
from dsh.tui.status_bar import StatusInfo, status_text
from tests.tui.conftest import SIZE, Rig, approval_ready, settle, submit
from tests.tui.test_pilot import bash_script, logged, run, text_of
from tests.tui.test_route_flags_tui import UI


def tool_results(app: DshApp) -> list[str]:
    results = [e for e in logged(app) if event_type_of(e) == "tool/result"]
    return [r.data.message.content[0].content[0].text for r in results]


def test_approval_alone_names_the_mode_and_auto_runs_a_bash_call_without_the_modal(rig: Rig):
    app = rig.app(bash_script("echo unasked"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "/approval")
        assert "Approval mode: ask (tools that change things ask first)" in text_of(app)
        assert app.status_bar.info.approval is None  # ask: the bar says nothing
        await submit(pilot, "/approval auto")
        assert "Approval mode for the rest of this run: auto" in text_of(app)
        assert app.status_bar.info.approval == "auto"
        await submit(pilot, "run it")
        await settle(pilot, lambda: not app.running)
        assert not isinstance(app.screen, ApprovalScreen)
        assert [text.strip() for text in tool_results(app)] == ["unasked"]
        assert "All done." in text_of(app)

    run(app, body)


def test_a_mode_chosen_during_a_turn_decides_its_next_calls(rig: Rig):
    """The running agent's policy is the one changed: after answering the first call, the
    second runs unasked."""
    app = rig.app(bash_script("echo one", "echo two"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "run them")
        await approval_ready(pilot)
        app.controller.choose_approval("auto")  # what /approval auto does, the modal being up
        await pilot.press("o")
        await settle(pilot, lambda: not app.running)
        assert [text.strip() for text in tool_results(app)] == ["one", "two"]

    run(app, body)


def test_read_only_denies_a_bash_call_without_asking_and_a_bad_mode_changes_nothing(rig: Rig):
    app = rig.app(bash_script("echo never"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "/approval yes-please")
        assert "/approval takes ask, auto or read-only, not 'yes-please'." in text_of(app)
        assert app.controller.approval == "ask"
        await submit(pilot, "/approval read-only")
        assert app.status_bar.info.approval == "read-only"
        await submit(pilot, "run it")
        await settle(pilot, lambda: not app.running)
        assert not isinstance(app.screen, ApprovalScreen)
        [denied] = tool_results(app)
        assert "denied by approval policy 'read-only'" in denied

    run(app, body)


def test_the_chosen_mode_lasts_the_run_but_is_not_recorded_with_the_session(rig: Rig):
    """``/new`` keeps it (as ``--yes`` would be kept); a new run on the same session asks
    again: neither the config nor the session's log holds the choice."""
    app = rig.app([{"text": "first"}, {"text": "second"}], approval="ask")
    opened: list[str] = []

    async def body(pilot: Any) -> None:
        await submit(pilot, "/approval auto")
        await submit(pilot, "hello")
        await settle(pilot, lambda: not app.running and app.controller.session is not None)
        assert app.controller.session is not None
        opened.append(app.controller.session.id)
        await submit(pilot, "/new")
        await settle(pilot, lambda: app.controller.session is None)
        assert app.controller.approval == "auto"
        assert app.status_bar.info.approval == "auto"

    run(app, body)
    again = rig.app([{"text": "third"}], approval="ask", resume=opened[0])

    async def reopened(pilot: Any) -> None:
        await settle(pilot, lambda: again.controller.session is not None)
        assert again.controller.approval == "ask"
        assert again.status_bar.info.approval is None

    run(again, reopened)


def test_the_status_bar_shows_a_mode_that_is_not_ask():
    shown = status_text(StatusInfo(model="m", approval="auto")).plain
    assert shown.startswith(" m · approval auto · context")
    assert "approval" not in status_text(StatusInfo(model="m")).plain


# ---- the flags: dsh --yes, dsh --allow --------------------------------------------------------


@pytest.fixture
def ui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> UI:
    ui = UI(tmp_path, monkeypatch)
    ui.home(tmp_path / "home")
    return ui


def started(options: Any, check: Any) -> None:
    """Run the real app on ``options`` until it is ready, then ``check(app)``."""
    app = DshApp(options)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            check(app)

    asyncio.run(main())


def test_dsh_yes_starts_in_auto_and_says_so(ui: UI) -> None:
    options = ui.options("--script", str(ui.script), "--yes")
    assert (options.yes, options.allow) == (True, frozenset())

    def check(app: DshApp) -> None:
        assert app.controller.approval == "auto"
        assert app.status_bar.info.approval == "auto"

    started(options, check)


def test_dsh_allow_lets_its_kinds_run_in_the_configured_mode(ui: UI) -> None:
    options = ui.options("--script", str(ui.script), "--allow", "bash,write")
    assert (options.yes, options.allow) == (False, frozenset({"shell", "write"}))

    def check(app: DshApp) -> None:
        assert app.controller.approval == "ask"
        assert app.controller.policy.allow == frozenset({"shell", "write"})

    started(options, check)


def test_an_untrusted_project_cannot_loosen_approval_but_dsh_yes_can(ui: UI) -> None:
    (ui.workspace / ".dsh").mkdir()
    (ui.workspace / ".dsh" / "config.toml").write_text('[tools]\napproval = "auto"\n')
    plain = ui.options("--script", str(ui.script))
    assert plain.settings.tools.approval == "ask"

    def asks(app: DshApp) -> None:
        assert app.controller.approval == "ask"

    started(plain, asks)
    flagged = ui.options("--script", str(ui.script), "--yes")

    def auto(app: DshApp) -> None:
        assert app.controller.approval == "auto"

    started(flagged, auto)


# ---- a protected write: asked every time, no "always" -----------------------------------------


def test_a_write_to_dsh_config_is_asked_every_time_even_in_auto_and_offers_no_always(rig: Rig):
    """``dsh --yes`` runs an ordinary write unasked, but a write of ``.dsh/config.toml`` puts up
    the prompt, saying why, with no "always" button and ``a`` answering nothing; the next such
    write is asked again."""
    config = rig.workspace / ".dsh" / "config.toml"
    write = [
        {"toolCalls": [{"name": "write_file", "arguments": {"path": p, "content": c}}]}
        for p, c in [
            ("ordinary.txt", "fine\n"),
            (".dsh/config.toml", "[tools]\n"),
            ("./.dsh/../.dsh/config.toml", '[tools]\napproval = "auto"\n'),
        ]
    ]
    app = rig.app([*write, {"text": "All done."}], approval="auto")

    async def body(pilot: Any) -> None:
        await submit(pilot, "configure yourself")
        screen = await approval_ready(pilot)
        assert (rig.workspace / "ordinary.txt").read_text() == "fine\n"  # ran unasked
        why = str(screen.query_one("#protected").render())
        assert why == (
            "Asked every time: writing .dsh/config.toml changes dsh's own configuration, which "
            "can run commands."
        )
        assert not screen.query("#always") and [b.id for b in screen.query(Button)] == [
            "once",
            "deny",
        ]
        await pilot.press("a")
        assert app.screen is screen and not config.exists()  # "a" answered nothing
        await pilot.press("o")
        await settle(pilot, lambda: config.exists() and app.screen is not screen)
        again = await approval_ready(pilot)
        assert again is not screen and again.protected is not None
        await pilot.press("d")
        await settle(pilot, lambda: not app.running)
        assert config.read_text() == "[tools]\n"
        assert "the user denied this call" in tool_results(app)[-1]
        assert app.controller.policy.always_allowed_tools == frozenset()

    run(app, body)


def test_a_hook_managers_config_and_a_hook_key_are_asked_with_their_reason_in_two_rows(rig: Rig):
    """``dsh --yes`` runs a package.json dependency bump unasked; its ``lint-staged`` edit and a
    ``lefthook.yml`` write each put up the prompt saying whose config it is, in no more rows
    than the prompt keeps for a reason."""
    package = rig.workspace / "package.json"
    package.write_text('{"dependencies": {"a": "1"}, "lint-staged": {"*.js": "eslint"}}\n')
    calls = [
        ("edit_file", {"path": "package.json", "old": '"a": "1"', "new": '"a": "2"'}),
        ("edit_file", {"path": "package.json", "old": '"eslint"', "new": '"sh x"'}),
        ("write_file", {"path": "lefthook.yml", "content": "pre-commit: {}\n"}),
    ]
    script = [{"toolCalls": [{"name": name, "arguments": args}]} for name, args in calls]
    app = rig.app([*script, {"text": "All done."}], approval="auto")

    async def body(pilot: Any) -> None:
        await submit(pilot, "set up hooks")
        shown = []
        for _ in range(2):
            screen = await approval_ready(pilot)
            reason = screen.query_one("#protected")
            shown.append(str(reason.render()))
            assert reason.size.height <= 2
            await pilot.press("d")
            await settle(pilot, lambda screen=screen: app.screen is not screen)
        await settle(pilot, lambda: not app.running)
        assert shown == [
            'Asked every time: writing package.json changes its "lint-staged" key: lint-staged\'s '
            "config, which runs commands on git commit.",
            "Asked every time: writing lefthook.yml changes lefthook's config, which runs "
            "commands on git commit.",
        ]
        assert '"a": "2"' in package.read_text() and '"eslint"' in package.read_text()
        assert not (rig.workspace / "lefthook.yml").exists()

    run(app, body)
