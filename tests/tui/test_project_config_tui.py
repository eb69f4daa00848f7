"""``dsh`` (the terminal UI) in a repository whose untrusted ``.dsh/config.toml`` does not load:
the UI starts, and the one warning saying the file is ignored is shown inside it (a toast and a
``/warnings`` row), not printed on the terminal the UI is about to cover; if the start fails
after it, it is printed before the error. The command line parsed by the real ``cli`` with the
console script's stderr printer, then the real app under its pilot."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import dsh.tui.app_warnings
from dsh.cli.main import cli
from dsh.cli.warning_lines import print_to_stderr
from dsh.tui import DshApp
from tests.tui.conftest import SIZE, settle, submit
from tests.tui.test_pilot import text_of
from tests.tui.test_route_flags_tui import UI
from tests.tui.test_warnings import toasts


@pytest.fixture
def printer() -> Iterator[Callable[[], None]]:
    """Installs the ``dsh`` console script's stderr printer (``ConsoleScript.start``) when
    called, from the test's body (where ``capsys`` captures ``sys.stderr``); removed after."""
    logger = logging.getLogger("dsh")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield print_to_stderr
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate


@pytest.fixture
def ui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> UI:
    monkeypatch.setattr(dsh.tui.app_warnings, "TOAST_SECONDS", 3600.0)  # up for the whole test
    ui = UI(tmp_path, monkeypatch)
    ui.home(tmp_path / "home")
    (ui.workspace / ".dsh").mkdir()
    (ui.workspace / ".dsh" / "config.toml").write_text('[hooks]\npre_tool = "x"\n')
    return ui


def ignored(ui: UI) -> str:
    return (
        f"{ui.workspace / '.dsh' / 'config.toml'}: ignored this untrusted project config, which "
        "does not load: unknown config section [hooks] (did you mean [tools]?) (dsh runs without "
        "it until it is fixed)"
    )


def test_the_ui_starts_and_shows_the_ignored_project_config_once_inside_it(
    ui: UI, printer: Callable[[], None], capsys: pytest.CaptureFixture[str]
) -> None:
    printer()
    options = ui.options("--script", str(ui.script))  # exit 0: the file did not stop it
    assert capsys.readouterr().err == ""  # not printed where the UI would hide it
    assert options.load_warnings == (ignored(ui),)
    app = DshApp(options)

    async def main() -> None:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, lambda: app.ready and bool(toasts(app)))
            assert toasts(app) == [("warning", f"warning: {ignored(ui)}")]
            await submit(pilot, "/warnings")
            await settle(pilot, lambda: "Warnings and errors since the UI started" in text_of(app))

    asyncio.run(main())
    assert [(e.text, e.count) for e in app.warnings.entries] == [(ignored(ui), 1)]
    assert capsys.readouterr().err == ""  # shown inside, so not printed after either


def test_a_start_that_fails_after_the_warning_prints_it_before_its_error(
    ui: UI, printer: Callable[[], None], capsys: pytest.CaptureFixture[str]
) -> None:
    printer()
    result = CliRunner().invoke(cli, ["--replay", "no-such-session"])
    assert result.exit_code == 1 and "no session 'no-such-session'" in result.output
    assert capsys.readouterr().err == f"dsh: warning: {ignored(ui)}\n"


def test_the_picker_and_the_ui_say_it_once_between_them(
    ui: UI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dsh --resume`` reads the configuration for the session picked (the picker refuses
    one it could not open), then again to open it: the warning the picker showed is in the
    shared ``/warnings`` log, and not told again by the UI."""
    import dsh.cli.tui as cli_tui
    import dsh.tui.picker
    from dsh.tui.app_warnings import WarningLog, one_line

    first = ui.options("--script", str(ui.script))
    text, _ = ui.turn(first, "hi")
    assert "first answer" in text
    seen: list[Any] = []

    def pick(store: Any, warnings: WarningLog, refuse: Any) -> str:
        (header,) = store.list()
        records: list[logging.LogRecord] = []
        catch = logging.Handler()
        catch.emit = records.append  # type: ignore[method-assign]
        logging.getLogger("dsh").addHandler(catch)
        try:
            assert refuse(header.id) is None
        finally:
            logging.getLogger("dsh").removeHandler(catch)
        for record in records:  # as the picker's own warning router keeps them
            warnings.add(record, one_line(record))
        seen.append(warnings)
        return header.id

    monkeypatch.setattr(cli_tui, "interactive", lambda: True)
    monkeypatch.setattr(dsh.tui.picker, "pick_session", pick)
    options = ui.options("--resume", "--script", str(ui.script))
    assert [e.text for e in seen[0].entries] == [ignored(ui)]
    assert options.load_warnings == ()
