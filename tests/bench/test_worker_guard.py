"""A bench worker runs the scenarios' shell commands with the provider keys in its own
environment, so it is closed to them as ``dsh`` itself is (``dsh.tools.process_guard``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PR_GET_DUMPABLE = 3


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_bench_worker_makes_itself_non_dumpable_before_its_first_job() -> None:
    probe = (
        "import ctypes\nfrom dsh.bench.stopping import prepare_worker\n"
        "libc = ctypes.CDLL(None)\n"
        f"before = libc.prctl({PR_GET_DUMPABLE}, 0, 0, 0, 0)\nprepare_worker()\n"
        f"print(before, libc.prctl({PR_GET_DUMPABLE}, 0, 0, 0, 0))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "0"]
