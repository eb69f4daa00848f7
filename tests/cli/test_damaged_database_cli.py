"""The SQLite store's database file itself damaged (garbage bytes, cut short, its sessions table
unreadable) or not a file at all: every command says so in one line that names the file and what
can be done, the file is never changed, and what the line suggests works. The real console
script, as a subprocess, on a real database file."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import DSH
from tests.helpers import run_session_id


def dsh(*args: str, env, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def sqlite_sessions(tmp_path: Path, env: dict[str, str], count: int = 2) -> list[str]:
    """``count`` sessions written in the JSONL store and moved into SQLite, as a person who
    switched stores has them; ``env`` is left on the SQLite store."""
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}, {"text": "again"}]))
    ids = []
    for i in range(count):
        ran = dsh("run", "--script", str(script), f"hello {i}", env=env, cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr
        ids.append(run_session_id(ran.stderr))
    moved = dsh("sessions", "migrate", "--to", "sqlite", env=env, cwd=tmp_path)
    assert moved.returncode == 0 and f"moved {count} session(s)" in moved.stdout, moved.stderr
    env["DSH_STORE_BACKEND"] = "sqlite"
    return ids


def database(env: dict[str, str]) -> Path:
    return Path(env["DSH_HOME"]) / "dsh.sqlite3"


def with_its_files(path: Path) -> list[Path]:
    """The database and the write-ahead log and index SQLite keeps beside it (those there)."""
    named = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
    return [p for p in named if p.exists()]


def checkpointed(path: Path) -> None:
    """Everything in the database file itself and nothing beside it, as a clean close leaves
    it (so that changing the file's bytes is all the damage there is)."""
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    for extra in with_its_files(path)[1:]:
        extra.unlink()


def garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 32)


def cut_short(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:5000])  # its first page and part of the next


def sessions_table_lost(path: Path) -> None:
    """The page holding the sessions table overwritten: the file opens, no session is named."""
    db = sqlite3.connect(path)
    try:
        (root,) = db.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'sessions'"
        ).fetchone()
    finally:
        db.close()
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    data[(root - 1) * size : root * size] = b"\xff" * size
    path.write_bytes(bytes(data))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "garbage bytes": garbage,
    "cut short": cut_short,
    "its sessions table lost": sessions_table_lost,
}


def assert_damaged_line(done: subprocess.CompletedProcess[str], path: Path) -> str:
    """One error line naming the damaged ``path``, that repair cannot mend it and what can."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("dsh: error: ") and done.stderr.count("\n") == 1, done.stderr
    line = done.stderr.rstrip("\n")
    assert f"the session database {path} is damaged;" in line
    assert "`dsh sessions repair` cannot mend it" in line
    assert "move it and its -wal and -shm files aside, and dsh starts a new one" in line
    assert not line.endswith("…")  # whole, not cut to the error line's bound
    return line


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_database_is_one_line_naming_it_and_what_to_do_and_is_left_as_it_is(
    tmp_path: Path, env: dict[str, str], damage: str
) -> None:
    first, _ = sqlite_sessions(tmp_path, env)
    path = database(env)
    checkpointed(path)
    DAMAGE[damage](path)
    damaged = path.read_bytes()
    script = str(tmp_path / "s.json")
    for args in (
        ("sessions", "list"),
        ("sessions", "list", "--all"),
        ("sessions", "show", first),
        ("sessions", "repair", first),
        ("run", "--script", script, "--session", first, "more"),
        ("run", "--script", script, "a new session"),
    ):
        line = assert_damaged_line(dsh(*args, env=env, cwd=tmp_path), path)
        assert "before-repair" not in line  # no copy was ever made: none is offered
        assert path.read_bytes() == damaged, args  # never rewritten, never removed
    assert not list(path.parent.glob("dsh.sqlite3.before-repair-*"))


def test_moving_a_damaged_database_aside_as_told_starts_a_new_one_and_keeps_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    sqlite_sessions(tmp_path, env)
    path = database(env)
    garbage(path)
    damaged = path.read_bytes()
    assert_damaged_line(dsh("sessions", "list", env=env, cwd=tmp_path), path)

    aside = tmp_path / "aside"
    aside.mkdir()
    for found in with_its_files(path):  # as the line says: it and its -wal and -shm files
        found.rename(aside / found.name)
    listed = dsh("sessions", "list", env=env, cwd=tmp_path)
    ran = dsh("run", "--script", str(tmp_path / "s.json"), "after", env=env, cwd=tmp_path)

    assert listed.returncode == 0 and listed.stdout.startswith("no sessions"), listed.stderr
    assert ran.returncode == 0, ran.stderr
    new = run_session_id(ran.stderr)
    assert dsh("sessions", "list", env=env, cwd=tmp_path).stdout.startswith(new)
    assert (aside / "dsh.sqlite3").read_bytes() == damaged


def test_a_copy_left_by_repair_is_offered_and_putting_it_back_as_told_restores_its_sessions(
    tmp_path: Path, env: dict[str, str]
) -> None:
    first, second = sqlite_sessions(tmp_path, env)
    path = database(env)
    db = sqlite3.connect(path)
    try:  # one event of the first session no longer decodes: repair cuts it, copying first
        db.execute(
            "UPDATE events SET body = CAST('{oops' AS BLOB) WHERE session_id = ? AND seq = 3",
            (first,),
        )
        db.commit()
    finally:
        db.close()
    repaired = dsh("sessions", "repair", first, env=env, cwd=tmp_path)
    assert repaired.returncode == 0 and "copied the database to" in repaired.stdout
    garbage(path)

    line = assert_damaged_line(dsh("sessions", "list", env=env, cwd=tmp_path), path)
    assert line.endswith(
        "or put the newest dsh.sqlite3.before-repair-* copy (and its -wal) in its place"
    )
    aside = tmp_path / "aside"
    aside.mkdir()
    for found in with_its_files(path):
        found.rename(aside / found.name)
    copies = [
        c for c in path.parent.glob("dsh.sqlite3.before-repair-*") if not c.name.endswith("-wal")
    ]
    newest = max(copies, key=lambda c: c.name)
    newest.rename(path)  # in its place, and its -wal, if it has one, in the -wal's
    wal = newest.with_name(newest.name + "-wal")
    if wal.exists():
        wal.rename(path.with_name(path.name + "-wal"))

    listed = dsh("sessions", "list", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {row.split()[0]: row for row in listed.stdout.splitlines()[:2]}
    assert set(rows) == {first, second}  # as it was before the repair, its bad event and all
    assert "UNREADABLE: seq 3: " in rows[first] and "hello 1" in rows[second]


def test_a_database_path_that_is_a_directory_is_one_line_not_no_sessions(
    tmp_path: Path, env: dict[str, str]
) -> None:
    (first,) = sqlite_sessions(tmp_path, env, count=1)
    path = database(env)
    for found in with_its_files(path):
        found.unlink()
    path.mkdir()
    for args in (
        ("sessions", "list"),
        ("sessions", "show", first),
        ("sessions", "repair", first),
        ("run", "--script", str(tmp_path / "s.json"), "x"),
    ):
        done = dsh(*args, env=env, cwd=tmp_path)
        assert done.returncode == 1 and done.stdout == "", (args, done.stdout)
        assert done.stderr == (
            f"dsh: error: the session database {path} is a directory, not a database file: "
            "move it out of the way (dsh then creates the database there)\n"
        )
    # the JSONL store lists its own sessions still, and says what is wrong with the other
    jsonl = {**env, "DSH_STORE_BACKEND": "jsonl"}
    listed = dsh("sessions", "list", env=jsonl, cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.startswith("no sessions"), listed.stderr
    assert listed.stderr.startswith("dsh: warning: the sqlite store, which is not in use, ")
    assert f"{path} is a directory" in listed.stderr

    path.rename(tmp_path / "was-a-directory")  # as the line says: out of the way
    ran = dsh("run", "--script", str(tmp_path / "s.json"), "x", env=env, cwd=tmp_path)
    assert ran.returncode == 0 and path.is_file(), ran.stderr
