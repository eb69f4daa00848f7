"""How a session with a changed byte reads in ``dsh sessions list`` and ``dsh sessions repair``,
on both stores: the listing's row gives the whole reason in the one form every unreadable session
has (it read ``0 turns  (unreadable: line 8: checksum mismatch (stored 2625c…)``, the title the
reason cut short), while the title the pickers show, cut, still closes every bracket it opens;
the repair report names the first bad place once (it read ``first bad line 8: line 8: …``) and
calls a SQLite row a row, as a load does (it said "the line changed"). The real console script."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from dsh.store import JsonlStore, SqliteStore
from dsh.transcript.listing import session_summaries
from tests.cli.conftest import DSH
from tests.helpers import run_session_id


def dsh(*args: str, env, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def balanced(text: str) -> bool:
    depth = 0
    for character in text:
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth < 0:
            return False
    return depth == 0


def change_a_byte(env: dict[str, str], backend: str, session_id: str) -> tuple[str, int]:
    """Change one letter of the first prompt where it is stored: its seal no longer matches.
    Returns how the store names the place ("line"/"seq") and its number."""
    home = Path(env["DSH_HOME"])
    if backend == "jsonl":
        path = home / "sessions" / session_id / "session.jsonl"
        lines = path.read_bytes().split(b"\n")
        index = next(i for i, line in enumerate(lines) if b"hello there" in line)
        lines[index] = lines[index].replace(b"hello there", b"hellO there")
        path.write_bytes(b"\n".join(lines))
        return "line", index + 1
    db = sqlite3.connect(home / "dsh.sqlite3")
    try:
        rows = db.execute("SELECT seq, body FROM events WHERE session_id = ?", (session_id,))
        seq, body = next((s, b) for s, b in rows.fetchall() if b"hello there" in b)
        changed = bytes(body).replace(b"hello there", b"hellO there")
        db.execute(
            "UPDATE events SET body = ? WHERE session_id = ? AND seq = ?",
            (changed, session_id, seq),
        )
        db.commit()
    finally:
        db.close()
    return "seq", seq


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_corrupt_sessions_title_closes_its_brackets_and_repair_names_the_place_once(
    tmp_path: Path, env: dict[str, str], backend: str
) -> None:
    env["DSH_STORE_BACKEND"] = backend
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}, {"text": "again"}]))
    ran = dsh("run", "--script", str(script), "hello there", env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    session_id = run_session_id(ran.stderr)
    healthy = dsh("sessions", "list", env=env, cwd=tmp_path)  # the summary cache covers it now
    assert f"{session_id}  " in healthy.stdout and "UNREADABLE" not in healthy.stdout
    unit, number = change_a_byte(env, backend, session_id)

    listed = dsh("sessions", "list", env=env, cwd=tmp_path)
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith(session_id)]
    noun = "line" if backend == "jsonl" else "row"
    assert row.startswith(f"{session_id}  UNREADABLE: {unit} {number}: checksum mismatch (stored ")
    assert row.endswith(
        f"); the {noun} changed after it was written  (try `dsh sessions repair {session_id}`)"
    )
    as_json = dsh("sessions", "list", "--json", env=env, cwd=tmp_path)
    (record,) = [r for r in json.loads(as_json.stdout) if r["id"] == session_id]
    assert record["unreadable"].endswith(f"the {noun} changed after it was written")
    assert "title" not in record and "turns" not in record and record["repairable"] is True
    home = Path(env["DSH_HOME"])
    store = JsonlStore(home) if backend == "jsonl" else SqliteStore(home)
    (summary,) = session_summaries(store)  # what the TUI's and the web's pickers show
    assert summary.title.startswith(f"(unreadable: {unit} {number}: checksum mismatch (stored ")
    assert summary.title.endswith("…))") and balanced(summary.title), summary.title

    repaired = dsh("sessions", "repair", session_id, env=env, cwd=tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    lines = repaired.stdout.splitlines()
    (dropped,) = [line for line in lines if line.startswith(("dropped lines ", "dropped events "))]
    assert f"; first bad {unit} {number}: checksum mismatch (stored " in dropped
    assert f"the {noun} changed after it was written" in dropped
    assert f"{unit} {number}: {unit} {number}" not in dropped
