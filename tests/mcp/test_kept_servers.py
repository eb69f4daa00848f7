"""An MCP server runs under dsh's keeper: what it starts in a session of its own (a ``setsid``
daemon) goes when the server is stopped, when it crashes, and when dsh is killed."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest

from dsh.tools.mcp.hub import McpHub
from tests.cli.test_process_guard_cli import gone_within, pid_in, start_dsh, wait_for
from tests.mcp.conftest import process_is_gone, server, toml_server, wait_until
from tests.mcp.test_hub import call, started_hub
from tests.tools.test_shell import alive

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="a Linux subreaper holds the daemons"
)


def with_daemon(tmp_path: Path) -> tuple[McpHub, Path]:
    """A started hub whose server started a daemon (its pid in the returned file)."""
    daemon_file = tmp_path / "daemon.pid"
    hub = started_hub(tmp_path, test=server(env={"MCP_TEST_DAEMON_FILE": str(daemon_file)}))
    return hub, daemon_file


@contextlib.contextmanager
def killed_at_the_end(*pid_files: Path):
    """Kill what the pid files name, whatever the test found."""
    try:
        yield
    finally:
        for pid_file in pid_files:
            with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_what_a_server_started_in_a_session_of_its_own_is_gone_once_the_hub_closed(
    tmp_path: Path,
) -> None:
    hub, daemon_file = with_daemon(tmp_path)
    with killed_at_the_end(daemon_file):
        try:
            daemon = int(daemon_file.read_text())  # written before the server answered
            assert alive(daemon) and os.getsid(daemon) == daemon  # out of the server's group
        finally:
            hub.close()
        assert process_is_gone(daemon)  # killed and reaped before close returned


def test_a_crashed_server_s_daemon_goes_with_it(tmp_path: Path) -> None:
    hub, daemon_file = with_daemon(tmp_path)
    daemon = int(daemon_file.read_text())
    first = tmp_path / "first-daemon.pid"  # the restarted server writes daemon.pid anew
    first.write_text(str(daemon))
    with killed_at_the_end(first, daemon_file):
        try:
            assert alive(daemon)
            call(hub, "mcp__test__crash", {})
            wait_until(lambda: not alive(daemon), "the crashed server's daemon to be killed")
        finally:
            hub.close()


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM])
def test_a_server_and_its_daemon_die_with_dsh_however_it_ends(
    tmp_path: Path, env: dict[str, str], stop: signal.Signals
) -> None:
    home = Path(env["DSH_HOME"])
    home.mkdir(parents=True)
    server_file, daemon_file = tmp_path / "server.pid", tmp_path / "daemon.pid"
    files = {"MCP_TEST_PID_FILE": str(server_file), "MCP_TEST_DAEMON_FILE": str(daemon_file)}
    (home / "config.toml").write_text(toml_server("test", env=files))
    proc = start_dsh(tmp_path, env, "echo $$ > busy.pid; sleep 600", None)
    with killed_at_the_end(server_file, daemon_file, tmp_path / "ws" / "busy.pid"):
        try:
            wait_for(tmp_path / "ws" / "busy.pid")  # the server started before the turn did
            assert alive(pid_in(daemon_file)) and alive(pid_in(server_file))
            proc.send_signal(stop)
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        # SIGTERM cancels the turn and exits 128 + the signal; SIGKILL kills
        assert proc.returncode == (-stop if stop == signal.SIGKILL else 128 + stop)
        assert gone_within(pid_in(daemon_file)), "the server's daemon outlived dsh"
        assert gone_within(pid_in(server_file)), "the server outlived dsh"
