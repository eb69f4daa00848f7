"""A resumed session runs its tools in its own recorded workspace (or ``--cwd``'s), which may
not be the directory ``dsh`` was started in: the UI says where they run, once as it opens (a
note) and in the status bar, and says nothing when the two agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.tui.status_bar import StatusInfo, status_text
from dsh.tui.workspace_shown import short_path
from tests.tui.conftest import SIZE, Rig, run_prompt, settle, status_at_rest
from tests.tui.test_pilot import run, stored_session, text_of

RECORDED = (
    "Tools run in ~/ws (this session's recorded workspace), not in ~/elsewhere where dsh was "
    "started."
)


@pytest.fixture
def home(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The home directory is the rig's root: its workspace shows as ``~/ws``."""
    root = rig.workspace.parent
    monkeypatch.setenv("HOME", str(root))
    (root / "elsewhere").mkdir()
    return root


def test_a_path_under_home_is_shown_with_a_tilde(tmp_path: Path):
    assert short_path(tmp_path / "a" / "b", home=tmp_path) == "~/a/b"
    assert short_path(tmp_path, home=tmp_path) == "~"
    assert short_path(Path("/srv/x"), home=tmp_path) == "/srv/x"
    assert short_path(tmp_path / "a\x1bb", home=tmp_path) == "~/a\\x1bb"  # no escape reaches it


def test_a_session_resumed_from_another_directory_says_where_its_tools_run(rig: Rig, home: Path):
    session_id = stored_session(rig.store, str(rig.workspace), "an old prompt")
    app = rig.app(
        [{"text": "x"}] * 3 + [{"text": "ok"}], resume=session_id, started_in=home / "elsewhere"
    )

    async def body(pilot: Any) -> None:
        assert " ".join(text_of(app).split()).endswith(RECORDED)
        assert app.status_bar.info.workspace == "~/ws"
        assert "workspace ~/ws" in status_text(app.status_bar.info, SIZE[0]).plain
        await run_prompt(pilot, "go on")  # it stays in the bar
        assert app.status_bar.info.workspace == "~/ws"

    run(app, body)


def test_with_cwd_the_note_names_cwd_as_the_reason(rig: Rig, home: Path):
    session_id = stored_session(rig.store, str(home / "elsewhere"), "an old prompt")
    app = rig.app([], resume=session_id, started_in=home / "elsewhere", workspace_from_flag=True)

    async def body(pilot: Any) -> None:
        shown = " ".join(text_of(app).split())
        assert shown.endswith(
            "Tools run in ~/ws (--cwd), not in ~/elsewhere where dsh was started."
        )
        assert app.status_bar.info.workspace == "~/ws"

    run(app, body)


def test_nothing_is_said_when_tools_run_where_dsh_was_started(rig: Rig, home: Path):
    session_id = stored_session(rig.store, str(rig.workspace), "an old prompt")
    app = rig.app([], resume=session_id)

    async def body(pilot: Any) -> None:
        assert "Tools run in" not in text_of(app)
        assert app.status_bar.info.workspace is None
        assert "workspace" not in status_text(app.status_bar.info, SIZE[0]).plain

    run(app, body)


def test_the_workspace_is_left_out_of_a_narrow_bar_before_the_model_and_the_context():
    info = StatusInfo(model="m", context_tokens=10, context_window=1000, workspace="~/ws")
    assert "workspace ~/ws" in status_text(info, 80).plain
    narrow = status_text(info, 30).plain
    assert "workspace" not in narrow and "context" in narrow


def test_resumed_elsewhere_snapshot(snap_compare, rig: Rig, home: Path):
    session_id = stored_session(rig.store, str(rig.workspace), "an old prompt")
    app = rig.app([], resume=session_id, started_in=home / "elsewhere")

    async def opened(pilot: Any) -> None:
        await settle(pilot, lambda: app.ready and status_at_rest(app))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=opened)
