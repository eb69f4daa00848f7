"""The instructions files in the system prompt (``dsh.agent.prompt.instructions_section``): yours
(``$DSH_HOME/AGENTS.md``) first, then each directory's ``AGENTS.md`` (else its ``CLAUDE.md``)
from the git root down to the workspace, each under a heading naming it, within one limit; and
a session states the files as read when it was opened (``dsh.agent.wiring``)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dsh.agent.prompt import AGENTS_MAX_CHARS, BASE_PROMPT, system_prompt
from dsh.agent.runtime import Route
from dsh.agent.wiring import build_agent
from dsh.bench.runner import BENCH_ENVIRONMENT
from dsh.config import Settings
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy

SECRET = "sk-OUTSIDE_MARKER_0123456789"


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    """A git root and a workspace two levels below it (``repo/app/web``)."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    workspace = root / "app" / "web"
    workspace.mkdir(parents=True)
    return root, workspace


def _instructions(prompt: str) -> str:
    """What the prompt says between the workspace line and the environment section."""
    parts = prompt.split("\n\n")
    assert parts[0] == BASE_PROMPT and parts[1].startswith("Workspace: ")
    end = next(i for i, p in enumerate(parts) if p.startswith("Environment (when"))
    return "\n\n".join(parts[2:end])


def test_the_git_roots_files_come_first_then_each_directory_down_to_the_workspace(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, workspace = _repo(tmp_path)
    (root / "AGENTS.md").write_text("Run make check from the root.\n")
    (root / "app" / "CLAUDE.md").write_text("The app uses pnpm.")
    (workspace / "AGENTS.md").write_text("Components live in src/components.")
    (tmp_path / "AGENTS.md").write_text("above the git root: never read")

    prompt = system_prompt(workspace, BENCH_ENVIRONMENT)

    assert _instructions(prompt) == (
        "Project instructions from ../../AGENTS.md:\nRun make check from the root.\n\n\n"
        "Project instructions from ../CLAUDE.md:\nThe app uses pnpm.\n\n"
        "Project instructions from AGENTS.md:\nComponents live in src/components."
    )
    assert warnings_of(caplog) == []


def test_a_directorys_agents_md_wins_over_its_claude_md(tmp_path: Path) -> None:
    root, workspace = _repo(tmp_path)
    (root / "AGENTS.md").write_text("agents rules")
    (root / "CLAUDE.md").write_text("claude rules")
    (workspace / "CLAUDE.md").write_text("only claude here")

    said = _instructions(system_prompt(workspace, BENCH_ENVIRONMENT))

    assert said == (
        "Project instructions from ../../AGENTS.md:\nagents rules\n\n"
        "Project instructions from CLAUDE.md:\nonly claude here"
    )


def test_without_a_git_root_only_the_workspace_is_read(tmp_path: Path) -> None:
    workspace = tmp_path / "plain" / "sub"
    workspace.mkdir(parents=True)
    (tmp_path / "plain" / "AGENTS.md").write_text("a parent's, outside any repository")
    (workspace / "CLAUDE.md").write_text("the workspace's")

    said = _instructions(system_prompt(workspace, BENCH_ENVIRONMENT))

    assert said == "Project instructions from CLAUDE.md:\nthe workspace's"


def test_one_agents_md_in_a_repositorys_subfolder_reads_as_one_at_a_workspaces_top(
    tmp_path: Path,
) -> None:
    """Nothing above it to add: the same bytes as a workspace in no repository."""
    _, workspace = _repo(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    for directory in (workspace, plain):
        (directory / "AGENTS.md").write_text("Be brief.")
    in_repo = system_prompt(workspace, BENCH_ENVIRONMENT)
    alone = system_prompt(plain, BENCH_ENVIRONMENT)
    assert in_repo.replace(str(workspace), str(plain)) == alone
    assert "\n\nProject instructions from AGENTS.md:\nBe brief.\n\n" in alone


def test_your_own_agents_md_comes_first_under_its_own_heading(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "AGENTS.md").write_text("Answer in British English.")
    root, workspace = _repo(tmp_path)
    (root / "AGENTS.md").write_text("root rules")

    said = _instructions(system_prompt(workspace, BENCH_ENVIRONMENT, home=home))

    assert said == (
        "The user's own instructions, for every project ($DSH_HOME/AGENTS.md):\n"
        "Answer in British English.\n\n"
        "Project instructions from ../../AGENTS.md:\nroot rules"
    )
    assert "British" not in system_prompt(workspace, BENCH_ENVIRONMENT)  # no home: not read


def test_a_parents_file_leading_outside_the_repository_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, workspace = _repo(tmp_path)
    secret = tmp_path / "secret.toml"
    secret.write_text(f'api_key = "{SECRET}"\n')
    (root / "AGENTS.md").symlink_to(secret)
    (root / "app" / "AGENTS.md").symlink_to("../README.md")  # inside the repository: read
    (root / "README.md").write_text("Read me.")

    prompt = system_prompt(workspace, BENCH_ENVIRONMENT)

    assert SECRET not in prompt
    assert _instructions(prompt) == "Project instructions from ../AGENTS.md:\nRead me."
    assert warnings_of(caplog) == [
        f"{root / 'AGENTS.md'} left out of the system prompt: it leads outside the git "
        "repository (a symlink on its way points out of it)"
    ]


def test_your_own_file_leading_outside_dsh_home_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (tmp_path / "key").write_text(SECRET)
    (home / "AGENTS.md").symlink_to(tmp_path / "key")

    prompt = system_prompt(workspace, BENCH_ENVIRONMENT, home=home)

    assert SECRET not in prompt and _instructions(prompt) == ""
    assert warnings_of(caplog) == [
        f"{home / 'AGENTS.md'} left out of the system prompt: it leads outside $DSH_HOME "
        "(a symlink on its way points out of it)"
    ]


def test_a_binary_parent_agents_md_is_left_out_and_not_replaced_by_its_claude_md(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, workspace = _repo(tmp_path)
    (root / "AGENTS.md").write_bytes(b"\x00\x01binary")
    (root / "CLAUDE.md").write_text("claude rules")

    assert _instructions(system_prompt(workspace, BENCH_ENVIRONMENT)) == ""
    assert warnings_of(caplog) == [
        f"{root / 'AGENTS.md'} left out of the system prompt: it is a binary file"
    ]


def test_the_limit_is_given_to_the_nearest_file_first_and_says_what_it_cut(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "AGENTS.md").write_text("yours")
    root, workspace = _repo(tmp_path)
    near = AGENTS_MAX_CHARS - 1000
    (workspace / "AGENTS.md").write_text("w" * near)
    (root / "app" / "AGENTS.md").write_text("a" * 1500)
    (root / "AGENTS.md").write_text("r" * 10)

    said = _instructions(system_prompt(workspace, BENCH_ENVIRONMENT, home=home))

    left_out = f"[left out: over the {AGENTS_MAX_CHARS:,} characters all instructions files hold]"
    assert said == (
        f"The user's own instructions, for every project ($DSH_HOME/AGENTS.md):\n{left_out}\n\n"
        f"Project instructions from ../../AGENTS.md:\n{left_out}\n\n"
        f"Project instructions from ../AGENTS.md:\n{'a' * 1000}\n[../AGENTS.md truncated]\n\n"
        f"Project instructions from AGENTS.md:\n{'w' * near}"
    )
    assert warnings_of(caplog) == [
        f"{root / 'AGENTS.md'} left out of the system prompt: the instructions files hold "
        f"{AGENTS_MAX_CHARS:,} characters at most",
        f"{home / 'AGENTS.md'} left out of the system prompt: the instructions files hold "
        f"{AGENTS_MAX_CHARS:,} characters at most",
    ]


def _agent(store: JsonlStore, session: Session, workspace: Path):
    route = Route(ScriptedProvider(parse_script([{"text": "ok"}]), model="m"), "m", 64_000)
    return build_agent(
        session, Settings(), route, workspace=workspace, policy=ApprovalPolicy("auto")
    )


def test_a_session_keeps_the_instructions_it_was_opened_with_until_it_is_opened_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another model (``/model`` builds a new agent) must not change the system prompt because
    a parent directory's file changed; a reopened session reads them afresh, as its date."""
    home = tmp_path / "dsh-home"
    home.mkdir()
    monkeypatch.setenv("DSH_HOME", str(home))
    (home / "AGENTS.md").write_text("yours, first")
    root, workspace = _repo(tmp_path)
    (root / "AGENTS.md").write_text("root, first")
    store = JsonlStore(tmp_path / "store")
    session = Session.create(store, cwd=str(workspace))

    first = _agent(store, session, workspace).config.system
    assert "yours, first" in first and "root, first" in first
    (root / "AGENTS.md").write_text("root, edited")
    (home / "AGENTS.md").write_text("yours, edited")
    assert _agent(store, session, workspace).config.system == first

    session.close()
    reopened = Session.open(store, session.id, writable=True)
    again = _agent(store, reopened, workspace).config.system
    assert "root, edited" in again and "yours, edited" in again
