"""A tiny MCP server for the tests, run as ``python mcp_test_server.py`` over stdio.

Tools: ``add`` (a sum), ``fail`` (raises: an ``isError`` result), ``slow`` (sleeps: for the
timeout and cancel tests), ``image`` (a text block and an image block), ``crash`` (the server
exits mid-call) and ``env`` (the value of one variable, for the environment tests).
``MCP_TEST_PID_FILE``, when set, receives the server's pid at start, ``MCP_TEST_SLOW_FILE`` a line
when ``slow`` begins; ``--crash-at-start`` makes it exit before the handshake.

For the restart tests: ``MCP_TEST_STARTS_FILE`` gets one line (the pid) per start; with it,
``--drop-on-restart TOOL`` leaves ``TOOL`` out of every start but the first and
``--crash-on-restart`` makes every start but the first exit before the handshake. For the tests
of a slow start: with ``MCP_TEST_HOLD_FILE`` set, the server writes ``<that file>.waiting`` and
then answers nothing (not even ``initialize``) until that file exists. With
``MCP_TEST_DAEMON_FILE`` set, it starts ``sleep 600`` in a session of its own (as a daemon does)
at start and writes that process's pid there. ``--long-argument-names`` adds the tool
``labelled``, whose second argument's name is 144 characters long (the web page's layout tests).

For the placement tests: ``MCP_TEST_WHERE_FILE`` receives, at start, a JSON object with the
server's working directory, its arguments and its ``DSH_WORKSPACE`` and ``PWD``. For the masking
tests: with ``MCP_TEST_SAY`` naming a variable, a crash (``crash``, ``--crash-at-start``) prints
that variable's value on stderr as its last line, as a server that dies of a refused key does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("dsh-test", log_level="CRITICAL")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
def slow(seconds: float) -> str:
    """Sleep for the given number of seconds, then answer."""
    started = os.environ.get("MCP_TEST_SLOW_FILE")
    if started:  # the tests wait for this file: the call is running
        Path(started).write_text("started")
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool(structured_output=False)
def image() -> list[object]:
    """A one-pixel PNG and a caption."""
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
    return ["a red dot", Image(data=png, format="png")]


@server.tool()
def crash() -> str:
    """Exit at once, mid-call."""
    say_a_secret()
    os._exit(1)


@server.tool()
def env(name: str) -> str:
    """The value of the environment variable ``name`` (or ``(unset)``)."""
    return os.environ.get(name, "(unset)")


def labelled(
    reason: str,
    an_argument_whose_name_is_longer_than_a_column_can_hold_an_argument_whose_name_is_longer_than_a_column_can_hold_an_argument_whose_name_is_longer: str,  # noqa: E501
) -> str:
    """Echo the reason (its other argument has a long name)."""
    return reason


def restarted() -> bool:
    """Record this start in ``MCP_TEST_STARTS_FILE``; True when it is not the first."""
    starts = os.environ.get("MCP_TEST_STARTS_FILE")
    if not starts:
        return False
    path = Path(starts)
    before = path.read_text().split() if path.exists() else []
    with path.open("a") as out:
        out.write(f"{os.getpid()}\n")
    return bool(before)


def start_daemon() -> None:
    """A ``setsid`` process of the server's, its pid in ``MCP_TEST_DAEMON_FILE``."""
    daemon_file = os.environ.get("MCP_TEST_DAEMON_FILE")
    if daemon_file:
        daemon = subprocess.Popen(
            ["sleep", "600"],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        Path(daemon_file + ".part").write_text(str(daemon.pid))
        Path(daemon_file + ".part").rename(daemon_file)


def say_a_secret() -> None:
    """Print the value of the variable ``MCP_TEST_SAY`` names on stderr (a secret of its own)."""
    named = os.environ.get("MCP_TEST_SAY")
    if named:
        print(f"fatal: bad credentials tok={os.environ.get(named)}", file=sys.stderr, flush=True)


def record_where() -> None:
    """Write where it runs, its arguments and what it was told of the workspace."""
    where_file = os.environ.get("MCP_TEST_WHERE_FILE")
    if where_file:
        where = {
            "cwd": os.getcwd(),
            "argv": sys.argv[1:],
            "workspace": os.environ.get("DSH_WORKSPACE"),
            "pwd": os.environ.get("PWD"),
        }
        Path(where_file).write_text(json.dumps(where))


def hold() -> None:
    """Answer nothing until ``MCP_TEST_HOLD_FILE`` exists (the tests create it)."""
    held = os.environ.get("MCP_TEST_HOLD_FILE")
    if not held:
        return
    Path(held + ".waiting").write_text(str(os.getpid()))
    while not Path(held).exists():
        time.sleep(0.05)


if __name__ == "__main__":
    pid_file = os.environ.get("MCP_TEST_PID_FILE")
    if pid_file:
        Path(pid_file).write_text(str(os.getpid()))
    record_where()
    again = restarted()
    if "--crash-at-start" in sys.argv or (again and "--crash-on-restart" in sys.argv):
        print("this server crashes at start", file=sys.stderr)
        say_a_secret()
        sys.exit(3)
    if again and "--drop-on-restart" in sys.argv:
        server.remove_tool(sys.argv[sys.argv.index("--drop-on-restart") + 1])
    if "--long-argument-names" in sys.argv:
        server.add_tool(labelled)
    start_daemon()
    hold()
    server.run("stdio")
