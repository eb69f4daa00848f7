"""A session another process writes is busy in the listing exactly when it is in the session's
info: a real ``dsh run`` holding the session says ``heldBy`` its pid in both, and ``null`` in
both once it ended (the sidebar's badge and the header are drawn from these), in a JSONL store
and in a SQLite one (whose lock files live apart from the database)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dsh.store import SqliteStore
from dsh.surface import Session
from tests.web.conftest import make_env, open_client, wait_until

DSH = Path(sys.executable).parent / "dsh"  # the console script of this environment


def held_by(client: TestClient, sid: str) -> tuple[Any, Any]:
    """``heldBy`` as the listing's row and the session's info say it."""
    rows = client.get("/api/sessions").json()["sessions"]
    (row,) = [row for row in rows if row["id"] == sid]
    return row["heldBy"], client.get(f"/api/sessions/{sid}").json()["heldBy"]


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_the_listing_and_the_info_name_the_process_running_a_turn_alike(
    tmp_path: Path, backend: str
) -> None:
    env = make_env(tmp_path)
    home = env.store.home
    if backend == "sqlite":
        env.store = SqliteStore(home)  # type: ignore[assignment]
    with Session.create(env.store, cwd=env.workspace) as session:
        sid = session.id
    started, release = tmp_path / "started", tmp_path / "release"
    wait_loop = f"touch {started}; while [ ! -e {release} ]; do sleep 0.02; done"
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"text": "", "toolCalls": [{"name": "bash", "arguments": {"command": wait_loop}}]},
                {"text": "done"},
            ]
        )
    )
    with open_client(env) as client:
        assert held_by(client, sid) == (None, None)
        writer = subprocess.Popen(
            [str(DSH), "run", "--session", sid, "--provider", "scripted",
             "--script", str(script), "--yes", "loop"],
            env={**os.environ, "DSH_HOME": str(home), "DSH_STORE_BACKEND": backend},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=env.workspace,
        )  # fmt: skip
        try:
            wait_until(started.exists, 30, "the other process to run its tool")
            assert held_by(client, sid) == (writer.pid, writer.pid)
            release.touch()
            _out, err = writer.communicate(timeout=60)
            assert writer.returncode == 0, err.decode()
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        assert held_by(client, sid) == (None, None)


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_live_pid_left_in_the_lock_file_by_a_crash_is_not_busy(
    tmp_path: Path, backend: str
) -> None:
    """A crashed writer's pid, since reused by an unrelated live process (here a ``sleep``),
    holds no flock: the listing and the info say ``null``, as the TUI's and CLI's pickers do,
    not that process's pid."""
    env = make_env(tmp_path)
    if backend == "sqlite":
        env.store = SqliteStore(env.store.home)  # type: ignore[assignment]
    with Session.create(env.store, cwd=env.workspace) as session:
        sid = session.id
    unrelated = subprocess.Popen(["sleep", "60"])
    try:
        Path(env.store.lock_path(sid)).write_text(f"{unrelated.pid}\ndsh run\n")
        with open_client(env) as client:
            assert held_by(client, sid) == (None, None)
    finally:
        unrelated.kill()
        unrelated.wait()
