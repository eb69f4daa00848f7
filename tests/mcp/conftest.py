"""The MCP tests' server (``mcp_test_server.py``, run with this interpreter over stdio)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.config import McpServerSettings
from dsh.tools.mcp import close_mcp_servers

SERVER = Path(__file__).with_name("mcp_test_server.py")
STARTUP = 300.0
"""A start (Python importing the SDK) may be slow on a loaded machine; no test waits on this."""


def server(*args: str, **options: Any) -> McpServerSettings:
    """The test server's settings (``args`` go to the server script)."""
    options.setdefault("startup_timeout_s", STARTUP)
    return McpServerSettings(command=[sys.executable, str(SERVER), *args], **options)


def toml_server(name: str, *args: str, env: dict[str, str] | None = None, **keys: Any) -> str:
    """A ``[mcp.servers.NAME]`` table running the test server."""
    keys = {"command": [sys.executable, str(SERVER), *args], "startup_timeout_s": STARTUP, **keys}
    lines = [f"[mcp.servers.{name}]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in keys.items()]  # JSON is TOML here
    if env:
        lines.append(
            "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }"
        )
    return "\n".join(lines) + "\n"


def process_is_gone(pid: int) -> bool:
    """True when no process ``pid`` exists (a zombie still counts as existing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_until(condition: Callable[[], object], what: str, timeout: float = 120.0) -> None:
    """Wait for ``condition`` (a generous bound: the machine may be loaded)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def started_pids(starts_file: Path) -> list[int]:
    """The pids the test server wrote to its ``MCP_TEST_STARTS_FILE``, one per start."""
    return [int(pid) for pid in starts_file.read_text().split()] if starts_file.exists() else []


@pytest.fixture(autouse=True)
def _no_shared_servers_left() -> Iterator[None]:
    """Every test leaves no shared MCP server running."""
    yield
    close_mcp_servers()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The process environment without any developer ``DSH_*`` setting or provider key, with a
    private home (for the tests that run ``dsh`` as a process)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    for key in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        environ.pop(key, None)
    environ["DSH_HOME"] = str(tmp_path / "home")
    return environ
