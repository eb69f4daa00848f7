"""The ``grep`` tool's worker process starts with almost none of dsh's environment: no API key,
no ``DSH_WEB_TOKEN``. A process started afresh is dumpable again, so any process of the user's
(a command's background job) could read the worker's ``/proc/PID/environ`` while it runs.

The real worker is caught while it runs (a pattern that backtracks for ever keeps it busy) and
its environment read from ``/proc``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from dsh.tools.base import ToolContext
from dsh.tools.search import GrepTool

KEY = "sk-SNOOPME_deepseek_0123456789"
TOKEN = "SNOOPME_webtoken_0123456789abcdefghij"


def _worker_pid() -> int | None:
    """The pid of a ``grep_worker`` child of this process, if one runs."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = stat.rsplit(")", 1)[1].split()[1]
        if parent == me and b"dsh.tools.grep_worker" in command:
            return int(entry.name)
    return None


async def _environ_of_running_worker(ctx: ToolContext) -> dict[str, str]:
    call = asyncio.create_task(GrepTool().run({"pattern": "(a|a)*b"}, ctx))
    try:
        while (pid := _worker_pid()) is None:  # found while it matches (for ever): no deadline
            assert not call.done(), call
            await asyncio.sleep(0.01)
        raw = Path(f"/proc/{pid}/environ").read_bytes()  # its cmdline is the worker's: exec'd
    finally:
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    pairs = [item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item]
    return {name.decode(): value.decode() for name, value in pairs}


def test_the_grep_worker_gets_no_key_nor_token_of_dshs_environment(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    monkeypatch.setenv("DSH_WEB_TOKEN", TOKEN)
    monkeypatch.setenv("MY_SERVICE_PASSWORD", "hunter2-hunter2")
    monkeypatch.setenv("LC_CTYPE", "C.UTF-8")
    (workspace / "a.txt").write_text("a" * 40 + "\n")
    environ = asyncio.run(_environ_of_running_worker(ctx))
    dumped = repr(environ)
    assert KEY not in dumped
    assert TOKEN not in dumped
    assert "hunter2" not in dumped
    assert "DSH_WEB_TOKEN" not in environ
    assert environ.get("LC_CTYPE") == "C.UTF-8"  # it decodes file names as dsh does
    assert set(environ) <= {"LANG", "LANGUAGE", "PYTHONHOME", "PYTHONPATH", "PYTHONUTF8"} | {
        name for name in environ if name.startswith("LC_")
    }
