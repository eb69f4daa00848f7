"""The CLI's warnings (``dsh: warning: …`` on stderr) are one line each, a terminal escape in
them shown as its escape: the logged warnings of ``dsh.*`` (the stderr printer's formatter) and
a command's own (``dsh.cli.context.warn``) alike. The formatter on its own, then the real
``dsh`` console script as a subprocess, with text it did not write in its warnings: a variable's
name from the environment, a workspace's directory name."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

from dsh.cli.warning_lines import OneLineFormatter
from dsh.errors import WARNING_LINE_CHARS, error_line
from tests.cli.conftest import DSH
from tests.helpers import run_session_id

OSC_CSI_NEWLINE = "\x1b]0;pwned\x07\x1b[31m\nred"
"""A terminal title change (OSC, ended by a bell), a colour (CSI) and a second line."""


def record(message: str, *args: object, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord("dsh.test", level, __file__, 1, message, args, None)


def assert_one_clean_line(stream: bytes) -> str:
    """``stream`` holds no raw escape or bell; its one line, decoded."""
    assert b"\x1b" not in stream and b"\x07" not in stream, stream[:300]
    (line,) = stream.decode().splitlines()
    return line


def test_a_logged_warning_is_one_line_with_its_escapes_shown():
    line = OneLineFormatter().format(record("server said: %s", OSC_CSI_NEWLINE))
    assert line == "dsh: warning: server said: \\x1b]0;pwned\\x07\\x1b[31m red"


def test_a_logged_error_is_named_by_its_level():
    line = OneLineFormatter().format(record("%s", "bad\x1b[2J", level=logging.ERROR))
    assert line == "dsh: error: bad\\x1b[2J"


def test_a_long_warning_is_cut_at_its_bound():
    long = OSC_CSI_NEWLINE + "x" * 5000
    line = OneLineFormatter().format(record("%s", long))
    said = line.removeprefix("dsh: warning: ")
    assert said == error_line(long, WARNING_LINE_CHARS)
    assert len(said) == WARNING_LINE_CHARS and said.endswith("…") and "\x1b" not in said


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([DSH, *args], env=env, cwd=cwd, capture_output=True, timeout=60)


def test_a_logged_warning_quoting_the_environment_reaches_stderr_escaped(
    tmp_path: Path, env: dict[str, str]
) -> None:
    name = f"DSH_NO_SUCH{OSC_CSI_NEWLINE}"  # names no config key: ignored with a warning
    done = dsh("sessions", "list", env={**env, name: "1"}, cwd=tmp_path)
    assert done.returncode == 0 and b"\x1b" not in done.stdout
    line = assert_one_clean_line(done.stderr)
    assert line == (
        "dsh: warning: ignored environment variable DSH_NO_SUCH\\x1b]0;pwned\\x07\\x1b[31m red: "
        "no config section matches (see docs/config.md)"
    )


def test_a_commands_warning_quoting_a_directory_name_reaches_stderr_escaped(
    tmp_path: Path, env: dict[str, str]
) -> None:
    hostile = tmp_path / f"ws{OSC_CSI_NEWLINE}"
    hostile.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "first"}, {"text": "second"}]))
    first = dsh("run", "--script", str(script), "hello", env=env, cwd=hostile)
    assert first.returncode == 0, first.stderr
    session_id = run_session_id(first.stderr)
    again = dsh(
        "run", "--script", str(script), "--session", session_id, "--cwd", str(elsewhere), "again",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert b"\x1b" not in again.stdout
    named, rest = again.stderr.split(b"\n", 1)  # the session line first, then the warning
    assert named == f"session: {session_id}".encode()
    line = assert_one_clean_line(rest)
    shown = f"{tmp_path}/ws\\x1b]0;pwned\\x07\\x1b[31m red"
    assert line == (
        f"dsh: warning: session {session_id} ran in {shown}; its tools now run in {elsewhere} "
        "(--cwd)"
    )
