"""``/undo`` in the terminal UI is not cancelled by the ctrl+c key (its file work runs in worker
threads, the session on the loop); a SIGINT is a signal (``kill -INT``: asyncio's handler raises
``KeyboardInterrupt`` on the second), held on the loop's thread and looked at between files.
Two SIGINTs while ``/undo`` changes the files — the second as it takes its steps back — reach
the process's handler only once the files are as the turn left them and the answer is logged;
the UI shows that answer, and the next ``/undo`` undoes the turn."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.events import CommandDoneEvent
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import run, text_of

TURN = {
    "toolCalls": [
        {"name": "edit_file", "arguments": {"path": "notes.txt", "old": "beta", "new": "BETA"}},
        {"name": "write_file", "arguments": {"path": "new.txt", "content": "made\n"}},
        {"name": "edit_file", "arguments": {"path": "other.txt", "old": "x", "new": "X"}},
    ]
}
AS_THE_TURN_LEFT_THEM = {
    "notes.txt": "alpha\nBETA\ngamma\n",
    "new.txt": "made\n",
    "other.txt": "X\n",
}


def flat(app: Any) -> str:
    return " ".join(text_of(app).split())


def files(workspace: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(workspace.iterdir()) if p.is_file()}


@pytest.fixture
def restore_sigint() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)


def test_sigints_during_undo_wait_until_its_files_are_consistent(
    rig: Rig, monkeypatch: pytest.MonkeyPatch, restore_sigint: None
) -> None:
    (rig.workspace / "other.txt").write_text("x\n")
    app = rig.app([TURN, {"text": "done"}])
    seen: list[tuple[dict[str, str], int]] = []

    def handler(signum: int, frame: Any) -> None:  # the process's own, where the signal lands
        answered = len(app.controller.session.of_type(CommandDoneEvent))
        seen.append((files(rig.workspace), answered))

    real = os.rename

    def rename(src: Any, dst: Any, **dirs: Any) -> None:
        if os.fspath(src).endswith(".old"):  # putting new.txt back: the second SIGINT
            signal.raise_signal(signal.SIGINT)
        real(src, dst, **dirs)
        if os.fspath(dst).endswith(".old"):  # new.txt moved aside: the first
            signal.raise_signal(signal.SIGINT)

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "change them")
        assert files(rig.workspace) == AS_THE_TURN_LEFT_THEM
        monkeypatch.setattr(os, "rename", rename)
        await submit(pilot, "/undo")
        await settle(pilot, lambda: "Undo of turn 1 stopped" in flat(app))
        monkeypatch.undo()
        assert "Undo of turn 1 stopped: interrupted before it was done" in flat(app)
        assert "nothing changed: every file is as the turn left it" in flat(app)
        assert seen == [(AS_THE_TURN_LEFT_THEM, 1), (AS_THE_TURN_LEFT_THEM, 1)]
        await submit(pilot, "/undo")
        await settle(pilot, lambda: "Undid turn 1:" in flat(app))
        assert files(rig.workspace) == {"notes.txt": "alpha\nbeta\ngamma\n", "other.txt": "x\n"}

    signal.signal(signal.SIGINT, handler)  # asyncio.run then leaves SIGINT to it
    run(app, body)
