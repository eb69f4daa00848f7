"""A stop a signal asked for ends the process even when the clean stop hangs, leaving every
thread's stack in dsh's home; a stop that finishes leaves nothing behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dsh.agent.exit_watchdog import stuck_log

HANGS_AT_EXIT = """
import sys, threading
from pathlib import Path
from dsh.agent.exit_watchdog import arm
print(__import__("os").getpid(), flush=True)
arm(Path(sys.argv[1]), "SIGTERM", within=0.5)
threading.Thread(target=threading.Event().wait, name="stuck-worker").start()
"""  # the interpreter waits for that thread at exit, forever

EXITS = """
import sys
from pathlib import Path
from dsh.agent.exit_watchdog import arm
print(__import__("os").getpid(), flush=True)
arm(Path(sys.argv[1]), "SIGHUP", within=30)
"""


def test_a_stop_that_hangs_ends_with_every_threads_stack_in_the_home(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", HANGS_AT_EXIT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,  # a deadline for a hang, not a timing assertion
    )
    assert done.returncode == 1
    log = stuck_log(tmp_path, int(done.stdout))
    text = log.read_text()
    assert "was asked to stop" in text and "(SIGTERM)" in text
    assert "Thread" in text and "wait" in text  # the stuck thread's stack


def test_a_stop_that_finishes_leaves_no_stuck_log(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", EXITS, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert not stuck_log(tmp_path, int(done.stdout)).exists()
    assert (tmp_path / "logs").is_dir()


def test_a_home_that_cannot_hold_the_log_sends_the_stacks_to_standard_error(tmp_path: Path):
    blocked = tmp_path / "home"
    blocked.write_text("a file where the home should be")
    done = subprocess.run(
        [sys.executable, "-c", HANGS_AT_EXIT, str(blocked)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "Thread" in done.stderr
