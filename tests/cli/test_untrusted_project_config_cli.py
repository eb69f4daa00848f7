"""A cloned repository cannot stop dsh: an untrusted ``./.dsh/config.toml`` that does not load
(an unknown section, not TOML) is one ``dsh: warning:`` line naming the file and the error, once
per command, and every face starts with the other layers (``dsh run``, ``--json`` included,
``dsh sessions``, ``dsh compact``, ``dsh web``). ``dsh trust`` refuses to trust such a file.
The real console script, as a subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import DSH
from tests.helpers import run_session_id

HOOKS = '[hooks]\npre_tool = "x"\n[tools]\napproval = "auto"\n'
"""An unknown section, beside a key an untrusted file may not set (not said: the file is
ignored whole)."""
NOT_TOML = "[tools\n"


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def workspace(tmp_path: Path, text: str) -> Path:
    ws = tmp_path / "ws"
    (ws / ".dsh").mkdir(parents=True)
    (ws / ".dsh" / "config.toml").write_text(text)
    (ws / "s.json").write_text(json.dumps([{"text": "first"}, {"text": "second"}]))
    return ws


def ignored_line(ws: Path, why: str) -> str:
    return (
        f"dsh: warning: {ws / '.dsh' / 'config.toml'}: ignored this untrusted project config, "
        f"which does not load: {why} (dsh runs without it until it is fixed)"
    )


UNKNOWN_SECTION = "unknown config section [hooks] (did you mean [tools]?)"
SYNTAX = "not valid TOML (Expected ']' at the end of a table declaration (at line 1, column 7))"


@pytest.mark.parametrize(("text", "why"), [(HOOKS, UNKNOWN_SECTION), (NOT_TOML, SYNTAX)])
def test_every_face_starts_and_says_the_ignored_file_once(
    tmp_path: Path, env: dict[str, str], text: str, why: str
) -> None:
    ws = workspace(tmp_path, text)
    line = ignored_line(ws, why)

    ran = dsh("run", "--script", "s.json", "hello", env=env, cwd=ws)
    assert ran.returncode == 0, ran.stderr
    session_id = run_session_id(ran.stderr)
    assert ran.stderr.splitlines() == [line, f"session: {session_id}"]

    as_json = dsh("run", "--json", "--script", "s.json", "again", env=env, cwd=ws)
    assert as_json.returncode == 0, as_json.stderr
    assert as_json.stderr.splitlines() == [line]

    for args in (["sessions", "list"], ["sessions", "show", session_id], ["compact", session_id]):
        done = dsh(*args, env=env, cwd=ws)
        assert done.returncode == 0, (args, done.stderr)
        assert done.stderr.splitlines().count(line) == 1, (args, done.stderr)
        assert not [x for x in done.stderr.splitlines() if x != line and "warning" in x], args


def test_dsh_web_starts_and_says_the_ignored_file_once(tmp_path: Path, env: dict[str, str]) -> None:
    ws = workspace(tmp_path, HOOKS)
    server = subprocess.Popen(
        [DSH, "web", "--port", "0", "--no-open", "--script", "s.json"],
        env=env,
        cwd=ws,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        opened = server.stdout.readline()  # printed once the server has started
        assert opened.startswith("dsh web: open http://127.0.0.1:"), opened
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=60)
    warnings = [x for x in stderr.splitlines() if x.startswith("dsh: warning:")]
    assert warnings == [ignored_line(ws, UNKNOWN_SECTION)]


def test_the_users_own_config_stays_an_error(tmp_path: Path, env: dict[str, str]) -> None:
    ws = workspace(tmp_path, '[tools]\napproval = "read-only"\n')
    home = Path(env["DSH_HOME"])
    home.mkdir()
    (home / "config.toml").write_text(HOOKS)
    done = dsh("sessions", "list", env=env, cwd=ws)
    assert done.returncode == 2
    assert done.stderr == (
        f"dsh: error: unknown config section [hooks] in {home / 'config.toml'} "
        "(did you mean [tools]?)\n"
    )


def test_dsh_trust_refuses_a_file_that_does_not_load_and_trusts_it_once_fixed(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Trusted, a file that does not load would be refused by every command there."""
    ws = workspace(tmp_path, HOOKS)
    config = ws / ".dsh" / "config.toml"
    refused = dsh("trust", env=env, cwd=ws)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"dsh: error: not trusting {ws}: {config} does not load: {UNKNOWN_SECTION}; fix it first\n"
    )
    assert not (Path(env["DSH_HOME"]) / "config.toml").exists()  # nothing recorded
    config.write_text('[tools]\napproval = "auto"\n')
    trusted = dsh("trust", env=env, cwd=ws)
    assert trusted.returncode == 0, trusted.stderr
    assert dsh("trust", "--list", env=env, cwd=ws).stdout == f"{ws}  (current)\n"
