"""Who holds a session's writer lock, as the page is told."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dsh.store import JsonlStore
from dsh.store.jsonl import LOCK_NAME
from dsh.surface import Session
from dsh.web.follow import lock_holder


def test_the_holder_is_a_live_other_process_never_a_dead_one_or_this_one(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path / "home")
    session = Session.create(store, cwd=tmp_path)
    sid = session.id
    lock = store.session_dir(sid) / LOCK_NAME
    assert lock_holder(store, sid) is None  # held by this very process
    session.close()
    assert lock_holder(store, sid) is None  # released: the pid is gone from the file

    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        try:
            lock.write_text(f"{other.pid}\n")
            assert lock_holder(store, sid) == other.pid
        finally:
            other.kill()
    lock.write_text(f"{other.pid}\n")  # a crashed writer leaves its pid behind
    assert lock_holder(store, sid) is None
    lock.write_text(f"{os.getpid()}\n")
    assert lock_holder(store, sid) is None
    lock.write_text("garbage\n")
    assert lock_holder(store, sid) is None
