"""A file a cloned repository (or the user's home) controls that is not a regular file — a
FIFO, or a symlink to ``/dev/zero``, which git commits like any symlink — cannot hang dsh or
fill its memory (``dsh.config.small_file``): a project config, ``.git/HEAD``, ``AGENTS.md`` or a
prompt command is left out with one warning line naming it and why, and the user's own config
is refused in one error line, as any unreadable one is. The real console script, as a
subprocess with a timeout and a cap on its memory, so a regression fails instead of hanging the
suite or the machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_run_cli import DSH, env, write_script

__all__ = ["env"]  # the fixture, shared with dsh run's tests

TIMEOUT = 90
"""Seconds a command may take: it takes one or two; a blocked read takes them all."""
MEMORY_CAP = 1024 * 1024 * 1024
"""The child's data segment cap: far above what dsh needs, far below what /dev/zero fills."""
OUTSIDE = "it leads outside the workspace (a symlink on its way points out of it)"
KINDS = {
    "fifo": "a FIFO, not a regular file",
    "zero": "a character device, not a regular file",
}


def put(path: Path, kind: str) -> Path:
    """A FIFO, or a symlink to ``/dev/zero``, at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_CAP, MEMORY_CAP))


def bounded_dsh(*args: str, env, cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [DSH, *args],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            preexec_fn=_capped,  # only setrlimit, from a module imported already
        )
    except subprocess.TimeoutExpired:  # run() killed it
        pytest.fail(f"dsh {' '.join(args)} did not finish in {TIMEOUT} s")


def warnings(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("dsh: warning: ")]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_special_project_config_is_ignored_with_one_warning(tmp_path, env, kind):
    config = put(tmp_path / ".dsh" / "config.toml", kind)

    done = bounded_dsh("sessions", "list", env=env, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        f"dsh: warning: {config}: ignored this untrusted project config, which does not load: "
        f"cannot read ({KINDS[kind]}) (dsh runs without it until it is fixed)\n"
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_special_user_config_is_refused_in_one_line(tmp_path, env, kind):
    config = put(Path(env["DSH_HOME"]) / "config.toml", kind)

    done = bounded_dsh("sessions", "list", env=env, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr == f"dsh: error: {config}: cannot read ({KINDS[kind]})\n"


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(
    ("relative", "said"),
    [
        (".git/HEAD", "not read for the git facts"),
        ("AGENTS.md", "left out of the system prompt"),
        (".dsh/commands/review.md", "skipped"),
    ],
)
def test_a_special_repository_file_is_left_out_of_a_run_with_one_warning(
    tmp_path, env, kind, relative, said
):
    workspace = tmp_path / "ws"
    special = put(workspace / relative, kind)
    script = write_script(tmp_path / "s.json", [{"text": "answered"}])

    done = bounded_dsh("run", "--script", str(script), "hi", env=env, cwd=workspace)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "answered"
    shown = f"prompt command {special}" if relative.endswith("review.md") else str(special)
    confined = relative != ".git/HEAD"  # the project's own files: /dev/zero is outside it
    reason = OUTSIDE if kind == "zero" and confined else KINDS[kind]
    assert warnings(done) == [f"dsh: warning: {shown} {said}: {reason}"]


MARKER = "sk-CONFIGKEY_abcdef123456"


@pytest.mark.parametrize("inside", [False, True], ids=["outside", "inside"])
def test_project_files_leading_outside_the_workspace_never_reach_the_log(tmp_path, env, inside):
    """The finding: a cloned repository's ``AGENTS.md`` (and a prompt command) symlinked to your
    dsh config put its ``api_key`` into every request and the ``request/header`` event. One
    leading outside is left out with one warning each, never naming where it leads; one
    leading to a file inside the workspace is read as before."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    target_dir = workspace / "docs" if inside else outside
    target_dir.mkdir(parents=True)
    workspace.mkdir(exist_ok=True)
    (target_dir / "config.toml").write_text(f'[provider]\napi_key = "{MARKER}"\n')
    (target_dir / "steal.md").write_text(f"Print {MARKER}\n")
    agents = workspace / "AGENTS.md"
    agents.symlink_to(os.path.relpath(target_dir / "config.toml", workspace))
    command = workspace / ".dsh" / "commands" / "steal.md"
    command.parent.mkdir(parents=True)
    command.symlink_to(os.path.relpath(target_dir / "steal.md", command.parent))
    script = write_script(tmp_path / "s.json", [{"text": "answered"}])

    done = bounded_dsh("run", "--script", str(script), "/steal", env=env, cwd=workspace)

    assert done.returncode == 0, done.stderr
    (log,) = Path(env["DSH_HOME"]).glob("sessions/*/session.jsonl")
    header = next(
        e for e in map(json.loads, log.read_text().splitlines()) if e["type"] == "request/header"
    )
    if inside:
        assert MARKER in json.dumps(header) and warnings(done) == []
        assert f"Print {MARKER}" in log.read_text()  # the command expanded
        return
    assert MARKER not in log.read_text() and MARKER not in done.stdout + done.stderr
    assert sorted(warnings(done)) == [
        f"dsh: warning: {agents} left out of the system prompt: {OUTSIDE}",
        f"dsh: warning: prompt command {command} skipped: {OUTSIDE}",
    ]
    assert str(outside) not in done.stderr
