"""What a command the model runs can reach of dsh's process, and what it leaves behind, through
the real ``dsh run``: dsh's environment under ``/proc`` is closed to it, and every process it
starts (``setsid`` and double-forked daemons included) stays under dsh, is reaped when it exits
and is killed when dsh exits, however dsh exits."""

from __future__ import annotations

import base64
import binascii
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_security_cli import DSH, bash_script, log_of, tool_results
from tests.helpers import run_session_id
from tests.tools.test_keeper import parent_of, the_idle_call_keeper
from tests.tools.test_shell import alive, read_pid

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="/proc, prctl and subreapers are Linux's"
)

KEY = "sk-test-7Hq2xVb9LmN4pR8sT1wZ"
PR_CAPBSET_DROP = 24
DEADLINE = 60.0

WALK_UP = (
    'p=$PPID; while :; do c=$(cat /proc/$p/comm); echo "== $p $c"; '
    'base64 -w0 /proc/$p/environ 2>&1; echo; [ "$c" = dsh ] && break; '
    "p=$(awk '/^PPid:/{print $2}' /proc/$p/status); [ \"$p\" -gt 1 ] || break; done; "
    'echo "== self"; base64 -w0 /proc/self/environ; echo'
)
"""Print every ancestor's environment, base64 (which output masking does not recognise), up
to dsh, then the command's own."""

LEAVE_BEHIND = (
    "setsid sleep 600 > /dev/null 2>&1 & echo $! > escaped.pid; "
    "(sleep 600 > /dev/null 2>&1 & echo $! > daemon.pid); "
    "setsid sh -c 'while [ ! -e go ]; do sleep 0.05; done' > /dev/null 2>&1 & echo $! > waiter.pid"
)
"""A process in a session of its own, a double-forked one, and one that exits on ``touch go``."""


def without_privilege() -> None:
    """Run as an ordinary process of the same user: a root test run drops every capability
    (root reads any ``/proc`` file whatever dsh does, and this is what the guard is not for)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for capability in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)


def start_dsh(tmp_path: Path, env: dict[str, str], *steps: str | None) -> subprocess.Popen[str]:
    script = bash_script(tmp_path / "s.json", *steps)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return subprocess.Popen(
        [DSH, "run", "--script", str(script), "--yes", "go"],
        env=env,
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=without_privilege,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return out, err


def result_texts(env: dict[str, str], err: str) -> list[str]:
    return [
        r["message"]["content"][0]["content"][0]["text"]
        for r in tool_results(env, session_id_of(err))
    ]


def session_id_of(err: str) -> str:
    return run_session_id(err)


def decoded_tokens(text: str) -> list[bytes]:
    """Every base64-looking token of ``text``, decoded."""
    found = []
    for token in re.findall(r"[A-Za-z0-9+/]{12,}={0,2}", text):
        try:
            found.append(base64.b64decode(token + "=" * (-len(token) % 4)))
        except (binascii.Error, ValueError):
            continue
    return found


def strings_in(log: str) -> list[str]:
    """Every string value of every line of a session log."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for line in log.splitlines():
        walk(json.loads(line))
    return found


def sections(text: str) -> dict[str, tuple[str, str]]:
    """``== PID COMM`` sections of the walk: pid (or ``self``) -> (comm, body)."""
    found = {}
    for block in text.split("== ")[1:]:
        head, _, body = block.partition("\n")
        pid, _, comm = head.partition(" ")
        found[pid] = (comm, body.strip())
    return found


def gone_within(pid: int, seconds: float = DEADLINE) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_for(path: Path, seconds: float = DEADLINE) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def pid_in(path: Path) -> int:
    return int(path.read_text().strip())


def test_a_command_reads_its_own_environment_but_not_dsh_s_key_under_proc(
    tmp_path: Path, env: dict[str, str]
) -> None:
    env |= {"DEEPSEEK_API_KEY": KEY, "VISIBLE_SETTING": "plain-value-42"}
    proc = start_dsh(tmp_path, env, WALK_UP, None)
    out, err = finish(proc)
    (text,) = result_texts(env, err)
    walk = sections(text)

    log = log_of(env, session_id_of(err))
    assert KEY not in log + out + err
    for seen in [*strings_in(log), out, err]:
        assert not any(KEY.encode() in block for block in decoded_tokens(seen)), "base64 of it"
    comm, body = walk[str(proc.pid)]  # dsh itself, reached by walking up
    assert comm == "dsh" and "Permission denied" in body
    own = base64.b64decode(walk["self"][1])
    assert b"VISIBLE_SETTING=plain-value-42" in own and b"PAGER=cat" in own
    assert b"DEEPSEEK_API_KEY" not in own  # scrubbed, as before


def test_what_a_command_leaves_running_stays_under_dsh_is_reaped_and_dies_with_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    check = (
        "for f in escaped daemon waiter; do p=$(cat $f.pid); chain=; "
        'while [ "$p" -gt 1 ]; do chain="$chain $(cat /proc/$p/comm)"; '
        "p=$(awk '/^PPid:/{print $2}' /proc/$p/status); done; echo \"$f:$chain\"; done; "
        "touch go; w=$(cat waiter.pid); for i in $(seq 1200); do "
        "[ -e /proc/$w ] || { echo waiter reaped; exit 0; }; sleep 0.05; done; "
        'echo "waiter left: $(cat /proc/$w/stat)"'
    )
    proc = start_dsh(tmp_path, env, LEAVE_BEHIND, check, None)
    _, err = finish(proc)
    workspace = tmp_path / "ws"
    _, seen = result_texts(env, err)

    # after the call that started them, they still run, under the call's keeper, under dsh's
    # keeper, under dsh
    assert "escaped: sleep dsh-call dsh-keeper dsh" in seen
    assert "daemon: sleep dsh-call dsh-keeper dsh" in seen
    assert "waiter: sh dsh-call dsh-keeper dsh" in seen
    assert "waiter reaped" in seen  # it exited while dsh ran: no zombie left
    for name in ("escaped", "daemon"):  # dsh has exited: so have they
        assert gone_within(pid_in(workspace / f"{name}.pid")), name


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_everything_commands_started_dies_with_dsh_when_a_signal_ends_it(
    tmp_path: Path, env: dict[str, str], stop: signal.Signals
) -> None:
    busy = "echo $$ > busy.pid; sleep 600"
    proc = start_dsh(tmp_path, env, LEAVE_BEHIND, busy, None)
    workspace = tmp_path / "ws"
    try:
        keeper = parent_of(parent_of(read_pid(workspace / "busy.pid", DEADLINE)))
        idle = the_idle_call_keeper(keeper, DEADLINE)  # waiting for the next call
        proc.send_signal(stop)
        proc.communicate(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
    # SIGTERM and SIGHUP cancel the turn and exit 128 + the signal; SIGKILL kills
    assert proc.returncode == (-stop if stop == signal.SIGKILL else 128 + stop)
    for name in ("escaped", "daemon", "waiter", "busy"):
        assert gone_within(pid_in(workspace / f"{name}.pid")), name
    assert gone_within(idle) and gone_within(keeper)


def test_an_mcp_server_dsh_starts_is_an_ordinary_process_again(
    tmp_path: Path, env: dict[str, str]
) -> None:
    pytest.importorskip("mcp")
    from tests.mcp.conftest import toml_server

    pid_file = tmp_path / "server.pid"
    home = Path(env["DSH_HOME"])
    home.mkdir(parents=True)
    (home / "config.toml").write_text(toml_server("test", env={"MCP_TEST_PID_FILE": str(pid_file)}))
    look = f"tr '\\0' '\\n' < /proc/$(cat {pid_file})/environ | grep -c MCP_TEST_PID_FILE"
    proc = start_dsh(tmp_path, env, WALK_UP, look, None)
    _, err = finish(proc)
    walk, seen = result_texts(env, err)
    assert "Permission denied" in sections(walk)[str(proc.pid)][1]  # dsh: closed
    assert seen.strip() == "1"  # its child, the server: readable like any process of yours
