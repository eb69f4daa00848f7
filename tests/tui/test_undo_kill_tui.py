"""An undo killed mid-way (SIGKILL, in a child process) and the session then resumed in the
terminal UI without undoing: opening it puts back what that undo left aside and removes its
files (``dsh.agent.undo_recovery``, run by ``Session.open``) before a prompt can run, and says so
once, in one line — a toast and a ``/warnings`` row — as ``dsh run`` prints it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import dsh.tui.app_warnings
from tests.agent.conftest import Harness
from tests.agent.test_undo_kill import HEAD, changed_turn, killed_undo, listing
from tests.tui.conftest import SIZE, Rig, settle
from tests.tui.test_warnings import toasts


@pytest.fixture(autouse=True)
def long_toasts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Toasts stay up for the whole test, however slow the machine."""
    monkeypatch.setattr(dsh.tui.app_warnings, "TOAST_SECONDS", 3600.0)


def test_resuming_a_session_whose_undo_was_killed_restores_its_files_and_says_so_once(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    changed_turn(harness)
    tag = killed_undo(harness, "unlink", 1)  # every file restored, new.txt not yet deleted
    app = Rig(tmp_path).app([], resume=harness.session.id)
    line = (
        f"{HEAD}cleaned up after it: put back new.txt; undo again to finish it (a.txt, b.txt "
        "already as before the turn)"
    )
    assert f".new.txt.dsh-undo-{tag}.old" in listing(harness.workspace)

    async def main() -> None:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, lambda: app.ready and len(toasts(app)) == 1)
            assert toasts(app) == [("warning", f"warning: {line}")]
            files = listing(harness.workspace)
            assert files["new.txt"] == "made\n"
            assert not [name for name in files if name.startswith(".new.txt.dsh-undo-")]

    asyncio.run(main())
    assert [(e.text, e.count) for e in app.warnings.entries] == [(line, 1)]
