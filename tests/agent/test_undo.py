"""``undo``: the file changes of the model's last turn taken back exactly, all or nothing, logged
with the command events, and told to the model (``dsh.agent.undo``), driven through the real
loop with the keyless scripted provider and real files."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.session_runner import SessionBusy, SessionRunner
from dsh.agent.undo import undo_last_turn
from dsh.events import (
    CommandDoneEvent,
    CommandRunEvent,
    PluginSource,
    UserMessageEvent,
)
from dsh.store import SqliteStore
from dsh.surface import Session
from dsh.tools.diffs import MAX_DIFF_CHARS
from tests.agent.conftest import Harness, run

ROOT = os.geteuid() == 0


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old": old, "new": new}}


def write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


def turn(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    """One turn's script: one reply per call (each call runs in order), then an answer."""
    return [*({"toolCalls": [call]} for call in calls), {"text": "done"}]


def run_turns(harness: Harness, *turns: list[dict[str, Any]]) -> None:
    agent = harness.agent([entry for one in turns for entry in one])
    for number, _ in enumerate(turns, 1):
        result = run(agent.run_turn(f"turn {number}"))
        assert result.reason == "completed", result


def command_events(session: Session) -> list[str]:
    return [
        type(e).__struct_config__.tag  # type: ignore[union-attr]
        for e in session.events
        if isinstance(e, CommandRunEvent | CommandDoneEvent)
        or (isinstance(e, UserMessageEvent) and isinstance(e.data.source, PluginSource))
    ]


@pytest.mark.parametrize(
    "original",
    [
        b"first\nsecond\nlast without newline",
        b"one\r\ntwo\r\nthree\r\n",
        "caf\u00e9 \u2603\n\u00fcber \U0001f600\nend\n".encode(),
        b"mixed\r\nends\rhere\n\n\n",
    ],
    ids=["no-final-newline", "crlf", "unicode", "mixed-endings"],
)
def test_undo_of_an_edit_restores_the_exact_bytes(harness: Harness, original: bytes):
    target = harness.workspace / "f.txt"
    target.write_bytes(original)
    old = original.decode().splitlines()[1]
    run_turns(harness, turn(edit("f.txt", old, "CHANGED\nlines")))
    assert target.read_bytes() != original
    result = undo_last_turn(harness.session)
    assert result.ok and result.restored == ("f.txt",), result.lines
    assert target.read_bytes() == original


def test_a_file_the_turn_created_is_deleted_with_the_directories_it_made(harness: Harness):
    run_turns(
        harness,
        turn(
            write("new/deep/made.py", "print(1)\n"),
            write("new/deep/other.py", "x = 1\n"),  # the directory it is in was made before
            edit("new/deep/made.py", "1", "2"),
        ),
    )
    assert (harness.workspace / "new/deep/made.py").read_text() == "print(2)\n"
    result = undo_last_turn(harness.session)
    assert result.deleted == ("new/deep/made.py", "new/deep/other.py"), result.lines
    assert not (harness.workspace / "new").exists()
    assert "  deleted new/deep/made.py (created by the turn)" in result.lines


def test_several_edits_of_one_file_in_one_turn_are_undone_newest_first(harness: Harness):
    target = harness.workspace / "calc.py"
    original = b"def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b"
    target.write_bytes(original)
    run_turns(
        harness,
        turn(
            edit("calc.py", "a - b", "a + b"),
            edit("calc.py", "return a + b\n\n\ndef sub", "return a + b\n\n\ndef minus"),
            write("calc.py", "def add(a, b):\n    return a + b\n"),
            edit("calc.py", "add", "plus"),
        ),
    )
    result = undo_last_turn(harness.session)
    assert result.ok and result.restored == ("calc.py",), result.lines
    assert target.read_bytes() == original


def test_a_file_changed_after_the_turn_refuses_the_whole_undo_and_changes_nothing(
    harness: Harness,
):
    (harness.workspace / "a.txt").write_text("alpha\n")
    (harness.workspace / "b.txt").write_text("beta\n")
    run_turns(harness, turn(edit("a.txt", "alpha", "ALPHA"), edit("b.txt", "beta", "BETA")))
    (harness.workspace / "b.txt").write_text("BETA\nthe person's own line\n")
    result = undo_last_turn(harness.session)
    assert not result.ok
    assert result.lines[1:] == (
        "  b.txt: changed since turn 1 (its content is not what edit_file left)",
    ), result.lines
    assert (harness.workspace / "a.txt").read_text() == "ALPHA\n"  # nothing was restored
    assert (harness.workspace / "b.txt").read_text() == "BETA\nthe person's own line\n"
    assert command_events(harness.session) == ["command/run", "command/done"]
    done = harness.session.of_type(CommandDoneEvent)[-1].data
    assert not done.ok and done.source_event_seq is None and "b.txt" in done.text
    (harness.workspace / "b.txt").unlink()  # deleted counts as changed as well
    assert "  b.txt: changed since turn 1 (deleted)" in undo_last_turn(harness.session).lines


def test_a_second_undo_reverts_the_turn_before_and_a_third_finds_nothing(harness: Harness):
    target = harness.workspace / "n.txt"
    target.write_text("v0\n")
    run_turns(
        harness,
        turn(edit("n.txt", "v0", "v1")),
        [{"text": "a turn that changes no file"}],
        turn(edit("n.txt", "v1", "v2")),
    )
    first = undo_last_turn(harness.session)
    assert first.turn == 3 and target.read_text() == "v1\n"
    second = undo_last_turn(harness.session)
    assert second.turn == 1 and target.read_text() == "v0\n", second.lines
    third = undo_last_turn(harness.session)
    assert third.ok and third.turn is None and "Nothing to undo" in third.text


@pytest.mark.parametrize("store_kind", ["jsonl", "sqlite"])
def test_undone_turns_stay_undone_after_the_session_is_reopened(tmp_path: Path, store_kind: str):
    harness = Harness(tmp_path)
    if store_kind == "sqlite":
        harness.session.close()
        harness.store = SqliteStore(tmp_path / "home-sqlite")
        harness.session = Session.create(harness.store, cwd=harness.workspace)
    target = harness.workspace / "n.txt"
    target.write_text("v0\n")
    run_turns(harness, turn(edit("n.txt", "v0", "v1")), turn(edit("n.txt", "v1", "v2")))
    assert undo_last_turn(harness.session).turn == 2
    harness.session.close()
    reopened = Session.open(harness.store, harness.session.id, writable=True)
    try:
        assert undo_last_turn(reopened, dry_run=True).turn == 1  # turn 2 is skipped
        assert undo_last_turn(reopened).turn == 1
        assert target.read_text() == "v0\n"
    finally:
        reopened.close()


def test_the_next_request_carries_a_note_naming_the_reverted_files(harness: Harness):
    (harness.workspace / "kept.txt").write_text("k\n")
    script = [
        *turn(edit("kept.txt", "k", "K"), write("made.txt", "new\n"), bash("true")),
        {"text": "next answer"},
    ]
    agent = harness.agent(script)
    run(agent.run_turn("change things"))
    result = undo_last_turn(harness.session)
    assert "  not undone: what the turn's 1 bash call changed (bash changes cannot be undone)" in (
        result.lines
    )
    run(agent.run_turn("what now?"))
    request = harness.provider.requests[-1]
    texts = [m.text() for m in request.messages if m.role == "user"]
    note = texts[-2]
    assert note.startswith("[undo] The user undid the file changes")
    assert "kept.txt (restored)" in note and "made.txt (deleted)" in note
    assert "1 bash call(s)" in note and texts[-1] == "what now?"
    logged = [e for e in harness.session.events if isinstance(e, UserMessageEvent)]
    source = logged[-2].data.source
    assert isinstance(source, PluginSource) and source.plugin == "undo"
    run_id = harness.session.of_type(CommandRunEvent)[-1].data.command_id
    assert source.source_command_id == run_id


def test_a_change_the_log_cannot_take_back_exactly_is_refused_by_name(harness: Harness):
    big = harness.workspace / "big.txt"
    big.write_text("x\n" * (MAX_DIFF_CHARS // 2) + "marker\n")
    (harness.workspace / "small.txt").write_text("s\n")
    run_turns(harness, turn(edit("small.txt", "s", "S"), edit("big.txt", "marker", "done")))
    result = undo_last_turn(harness.session)
    assert not result.ok
    assert result.lines[1].startswith("  big.txt: edit_file logged no diff of its change"), result
    assert (harness.workspace / "small.txt").read_text() == "S\n"


def test_a_diff_holding_a_masked_secret_is_refused_not_approximated(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("UNDO_TEST_TOKEN", "s3cret-value-42")
    (harness.workspace / "env.txt").write_text("TOKEN=s3cret-value-42\nLEVEL=1\n")
    run_turns(harness, turn(edit("env.txt", "LEVEL=1", "LEVEL=2")))
    result = undo_last_turn(harness.session)
    assert not result.ok
    assert result.lines[1] == (
        "  env.txt: its logged diff does not give back its exact old content "
        "(it holds a masked secret)"
    )
    assert (harness.workspace / "env.txt").read_text() == "TOKEN=s3cret-value-42\nLEVEL=2\n"


def test_a_dry_run_lists_what_would_be_reverted_and_changes_and_logs_nothing(harness: Harness):
    (harness.workspace / "a.txt").write_text("a\n")
    run_turns(harness, turn(edit("a.txt", "a", "A"), write("b.txt", "b\n")))
    events = len(harness.session.events)
    result = undo_last_turn(harness.session, dry_run=True)
    assert result.ok and result.dry_run
    assert result.lines == (
        "Would undo turn 1:",
        "  would restore a.txt",
        "  would delete b.txt (created by the turn)",
    )
    assert (harness.workspace / "a.txt").read_text() == "A\n"
    assert (harness.workspace / "b.txt").exists() and len(harness.session.events) == events


def test_a_failure_midway_puts_back_the_files_already_restored(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
):
    from dsh.agent import undo_files

    (harness.workspace / "a.txt").write_text("a\n")
    (harness.workspace / "b.txt").write_text("b\n")
    run_turns(harness, turn(edit("a.txt", "a", "A"), edit("b.txt", "b", "B")))
    real = undo_files._replace
    calls: list[Path] = []

    def failing_second(step: undo_files.FileStep, data: bytes, tag: str) -> None:
        calls.append(step.file)
        if len(calls) == 2:
            raise PermissionError(13, "Permission denied")
        real(step, data, tag)

    monkeypatch.setattr(undo_files, "_replace", failing_second)
    result = undo_last_turn(harness.session)
    assert not result.ok
    assert result.lines == (
        "Undo of turn 1 failed: a.txt: Permission denied",
        "  nothing changed: every file is as the turn left it",
    )
    assert (harness.workspace / "a.txt").read_text() == "A\n"  # b.txt was put back (call 3)
    assert (harness.workspace / "b.txt").read_text() == "B\n"
    assert len(calls) == 3
    assert harness.session.of_type(CommandDoneEvent)[-1].data.ok is False
    monkeypatch.setattr(undo_files, "_replace", real)
    assert undo_last_turn(harness.session).ok  # the turn is not marked undone
    assert (harness.workspace / "a.txt").read_text() == "a\n"


def test_a_turn_that_has_not_ended_is_refused(harness: Harness):
    from dsh.events import TurnStart

    (harness.workspace / "a.txt").write_text("a\n")
    run_turns(harness, turn(edit("a.txt", "a", "A")))
    harness.session.append(TurnStart(turn=2))
    result = undo_last_turn(harness.session)
    assert not result.ok and result.lines == ("Not undone: turn 2 has not ended.",)
    assert (harness.workspace / "a.txt").read_text() == "A\n"


def test_the_runner_refuses_undo_while_a_turn_runs(harness: Harness):
    class Wiring:
        def make_agent(self, session: Session, **options: Any) -> Any:
            return harness.agent([{"text": "slow", "delayMs": 60_000}])

    runner = SessionRunner(harness.session, Wiring(), approver=None)  # type: ignore[arg-type]

    async def scenario() -> None:
        task = runner.start_turn("go")
        with pytest.raises(SessionBusy):
            runner.undo()
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert runner.undo().text.startswith("Nothing to undo")


def test_an_undo_stopped_midway_answers_its_command_naming_the_files(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
):
    from dsh.agent import undo_files

    (harness.workspace / "a.txt").write_text("a\n")
    (harness.workspace / "b.txt").write_text("b\n")
    run_turns(harness, turn(edit("a.txt", "a", "A"), edit("b.txt", "b", "B")))

    def interrupted(step: undo_files.FileStep, data: bytes, tag: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(undo_files, "_replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        undo_last_turn(harness.session)
    done = harness.session.of_type(CommandDoneEvent)[-1].data
    assert not done.ok
    assert done.text == "Undo of turn 1 stopped: KeyboardInterrupt; check b.txt, a.txt"


# ---- how a file is written back ---------------------------------------------------------------


@pytest.mark.skipif(not ROOT, reason="giving a file to another user needs root")
def test_a_restored_file_keeps_its_owner_group_and_mode_as_write_file_keeps_them(
    harness: Harness,
):
    """Undo writes a file back as ``write_file`` writes one (``dsh.tools.atomic_write``): the
    file it renames over the old one gets that one's owner, group and permission bits; it used
    to become the undoing process's own."""
    target = harness.workspace / "f.txt"
    target.write_text("a\n")
    run_turns(harness, turn(edit("f.txt", "a", "A")))
    os.chown(target, 12345, 23456)
    os.chmod(target, 0o640)
    inode = os.stat(target).st_ino
    assert undo_last_turn(harness.session).ok
    info = os.stat(target)
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (12345, 23456, 0o640)
    assert target.read_text() == "a\n" and info.st_ino != inode  # a new file, renamed over


def test_a_restore_and_a_delete_are_on_stable_storage_with_their_directories(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
):
    """The restored bytes are synced before the rename, and the directory after it, so the name
    holds them after a power cut; a deleted file's directory is synced once it is gone (the
    workspace, when the directories the turn made for it went too)."""
    sub = harness.workspace / "sub"
    sub.mkdir()
    (sub / "a.txt").write_text("a\n")
    run_turns(
        harness,
        turn(edit("sub/a.txt", "a", "A"), write("sub/new.txt", "n\n"), write("made/m.txt", "m\n")),
    )
    steps: list[str] = []
    real_fsync, real_replace, real_unlink = os.fsync, os.replace, os.unlink

    def fsync(fd: int) -> None:
        steps.append(f"fsync {_named(os.readlink(f'/proc/self/fd/{fd}'), harness)}")
        real_fsync(fd)

    def replace(source: Any, target: Any, **dirs: Any) -> None:
        steps.append(f"replace {target}")
        real_replace(source, target, **dirs)

    def unlink(path: Any, **dirs: Any) -> None:
        where = dirs.get("dir_fd")
        full = (
            str(path)
            if where is None
            else os.path.join(os.readlink(f"/proc/self/fd/{where}"), path)
        )
        steps.append(f"unlink {_named(full, harness)}")
        real_unlink(path, **dirs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "unlink", unlink)
    result = undo_last_turn(harness.session)
    assert result.ok and result.deleted == ("made/m.txt", "sub/new.txt"), result.lines
    assert not (harness.workspace / "made").exists() and not (sub / "new.txt").exists()
    log_syncs = {s for s in steps if s.startswith("fsync ") and ".jsonl" in s}
    files = [s for s in steps if s not in log_syncs]
    assert files == [
        "fsync sub/.a.txt.dsh-undo-TAG.new",
        "replace a.txt",
        "fsync sub",  # a.txt's name, with its restored bytes
        "unlink made/.m.txt.dsh-undo-TAG.old",
        "unlink sub/.new.txt.dsh-undo-TAG.old",
        "fsync .",  # made/ is gone from the workspace
        "fsync sub",  # new.txt is gone from sub/
    ]


def _named(path: str, harness: Harness) -> str:
    """``path`` relative to the workspace, an undo's tag shown as TAG (the log's own syncs keep
    their paths)."""
    root = str(harness.workspace.resolve())
    if path != root and not path.startswith(root + "/"):
        return path
    relative = os.path.relpath(path, root)
    return re.sub(r"dsh-undo-[0-9a-f]{8}", "dsh-undo-TAG", relative)


def test_the_runner_runs_an_undo_off_the_loop_as_an_activity_nothing_else_joins_or_stops(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
):
    """``SessionRunner.start_undo`` (the terminal UI's ``/undo``): while its file work is held
    in its worker thread, the loop is free, a turn or another undo is refused as busy, and a
    cancel leaves it alone; it then finishes, logged."""
    (harness.workspace / "a.txt").write_text("a\n")
    run_turns(harness, turn(edit("a.txt", "a", "A")))

    class Wiring:
        def make_agent(self, session: Session, **options: Any) -> Any:
            return harness.agent([{"text": "never"}])

    runner = SessionRunner(harness.session, Wiring(), approver=None)  # type: ignore[arg-type]
    held, go = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if ".dsh-undo-" in os.readlink(f"/proc/self/fd/{fd}"):
            held.set()
            go.wait(timeout=30)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)

    async def scenario() -> Any:
        task = runner.start_undo()
        while not held.is_set():  # the loop runs while the file work waits
            await asyncio.sleep(0.01)
        with pytest.raises(SessionBusy, match=r"^an /undo is already running"):
            runner.start_turn("go")
        with pytest.raises(SessionBusy):
            runner.undo()
        assert runner.cancel() is None and not task.done()
        go.set()
        return await task

    result = asyncio.run(scenario())
    assert result.ok and result.restored == ("a.txt",)
    assert (harness.workspace / "a.txt").read_text() == "a\n"
    assert runner.activity is None and harness.session.of_type(CommandDoneEvent)[-1].data.ok
