"""Flag values refused in one line before anything is written: ``--model`` with a character that
does not print (as ``/model`` refuses it: the name is recorded, sent and shown on every face),
and ``dsh sessions import --id`` saying why an id is refused (an audit saw ``--id ..`` refused
with "use letters, digits, '.', '_' and '-'", which ``..`` is made of)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import DSH


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(tmp_path / "home")
    return environ


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("face", [["run", "hi"], ["web", "--no-open"]])
@pytest.mark.parametrize("name", ["qwen\nrm -rf", "a\tb", "m\x1b]0;x\x07"])
def test_a_model_name_that_does_not_print_is_refused(tmp_path, env, face, name):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "never"}]))
    done = dsh(*face, "--script", str(script), "--model", name, env=env, cwd=tmp_path)
    assert done.returncode == 2
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)
    assert done.stderr == (
        f"dsh: error: Invalid value for '--model': takes a model name on one line, not "
        f"'{shown}' (see `dsh {face[0]} --help`)\n"
    )
    assert not (Path(env["DSH_HOME"]) / "sessions").exists()


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("..", "'..' must start with a letter or a digit"),
        (".", "'.' must start with a letter or a digit"),
        ("a/b", "'a/b' may hold only letters, digits, '.', '_' and '-', not '/'"),
        ("x" * 101, f"'{'x' * 101}' has 101 characters, over 100"),
    ],
)
def test_an_import_id_is_refused_saying_why(tmp_path, env, given, why):
    log = tmp_path / "log.jsonl"
    log.write_text('{"type":"session","version":0,"id":"x1","createdAt":1767225600000}\n')
    done = dsh("sessions", "import", str(log), "--id", given, env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"dsh: error: Invalid value for '--id': {why} (see `dsh sessions import --help`)\n"
    )
    assert not (Path(env["DSH_HOME"]) / "sessions").exists()
