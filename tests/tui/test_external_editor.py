"""ctrl+g: the draft edited in $VISUAL / $EDITOR (a small script here), the file private and
removed after; a failing or missing editor leaves the draft as it was, saying why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.tui.external_editor import NO_EDITOR, editor_command
from tests.tui.conftest import Rig
from tests.tui.test_pilot import run


def hint(app: Any) -> str:
    return str(app.query_one("#hint").render())


def editor(tmp_path: Path, body: str) -> Path:
    """A script that notes the file it got (its last argument), and its mode, in ``seen``, then
    runs ``body`` (``$f``: the file)."""
    script = tmp_path / "fake-editor"
    seen = tmp_path / "seen"
    script.write_text(
        f'#!/bin/sh\nfor f; do :; done\necho "$f" > {seen}\nstat -c %a "$f" >> {seen}\n{body}\n'
    )
    script.chmod(0o755)
    return seen


def test_the_editor_round_trip(rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    seen = editor(tmp_path, 'printf "second line\\n" >> "$f"')
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{tmp_path / 'fake-editor'} --wait")
    app = rig.app([])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        box.value = "first line\n"
        await pilot.press("ctrl+g")
        assert box.value == "first line\nsecond line"  # its final line break dropped
        assert app.controller.session is None  # not sent
        await pilot.press("ctrl+z")  # the editor's change taken back
        assert box.value == "first line\n"

    run(app, body)
    path, mode = seen.read_text().split()
    assert path.endswith(".md") and mode == "600"
    assert not Path(path).exists()


def test_visual_wins_over_editor():
    assert editor_command({"VISUAL": "code --wait", "EDITOR": "vi"}) == ["code", "--wait"]
    assert editor_command({"EDITOR": "  ", "PATH": ""}) is None


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("exit 3", "The editor fake-editor exited with status 3; draft unchanged."),
        (None, "Could not run the editor missing-editor: No such file or directory"),
    ],
)
def test_a_failing_editor_leaves_the_draft(
    rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None, said: str
):
    seen = editor(tmp_path, f'echo "clobbered" > "$f"\n{setting}')
    name = "fake-editor" if setting else "missing-editor"
    monkeypatch.setenv("VISUAL", str(tmp_path / name))
    app = rig.app([])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        box.value = "keep me"
        await pilot.press("ctrl+g")
        assert box.value == "keep me"
        assert hint(app).startswith(said)
        await pilot.press("!")  # the draft changes: the keys again
        assert hint(app).startswith("enter send")

    run(app, body)
    if setting:
        assert not Path(seen.read_text().split()[0]).exists()


def test_no_editor_at_all_says_how_to_name_one(
    rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nano, no vi
    app = rig.app([])

    async def body(pilot: Any) -> None:
        app.prompt_box.value = "keep me"
        await pilot.press("ctrl+g")
        assert app.prompt_box.value == "keep me" and hint(app) == NO_EDITOR

    run(app, body)


def test_an_editor_found_only_through_an_empty_path_entry_is_not_run(
    rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """``PATH=:/usr/bin:/bin``: ``$VISUAL``'s ``planted-editor`` in dsh's directory is what
    ``execvp`` would find; dsh looks in PATH's absolute entries only, and says it found none."""
    marker = tmp_path / "RAN"
    planted = tmp_path / "planted-editor"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", ":/usr/bin:/bin")
    monkeypatch.setenv("VISUAL", "planted-editor")
    app = rig.app([])

    async def body(pilot: Any) -> None:
        app.prompt_box.value = "keep me"
        await pilot.press("ctrl+g")
        assert app.prompt_box.value == "keep me"
        assert hint(app).startswith("Could not run the editor planted-editor: not found on PATH")

    run(app, body)
    assert not marker.exists()
