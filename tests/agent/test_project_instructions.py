"""AGENTS.md in the system prompt (``dsh.agent.prompt.project_instructions``): read as UTF-8 and
cut at ``AGENTS_MAX_CHARS``; a file that cannot be instructions is left out with one warning
instead of putting garbage into every request."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from dsh.agent.prompt import AGENTS_MAX_CHARS, project_instructions, system_prompt
from dsh.bench.runner import BENCH_ENVIRONMENT


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_binary_agents_md_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_bytes(os.urandom(4096) + b"\x00" + os.urandom(4096))
    assert project_instructions(agents, within=tmp_path) is None
    assert warnings_of(caplog) == [f"{agents} left out of the system prompt: it is a binary file"]


def test_an_agents_md_that_is_not_utf8_is_left_out_naming_the_byte(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_bytes(b"Run the tests.\n" + "Café".encode("latin-1"))
    assert project_instructions(agents, within=tmp_path) is None
    assert warnings_of(caplog) == [
        f"{agents} left out of the system prompt: it is not UTF-8 (byte 18)"
    ]


def test_an_unreadable_agents_md_is_left_out_with_the_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("secret\n")

    def refused(path: object, *args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "open", refused)  # as a chmod 000 file refuses (root reads any)
    assert project_instructions(agents, within=tmp_path) is None
    assert warnings_of(caplog) == [f"{agents} left out of the system prompt: Permission denied"]


def test_a_long_agents_md_is_cut_at_the_limit_even_inside_a_multibyte_character(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("é" * (AGENTS_MAX_CHARS * 3), encoding="utf-8")  # 2 bytes each
    text = project_instructions(agents, within=tmp_path)
    assert text == "é" * AGENTS_MAX_CHARS + "\n[AGENTS.md truncated]"
    assert warnings_of(caplog) == []


def test_an_agents_md_of_exactly_the_limit_is_whole(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("世" * AGENTS_MAX_CHARS, encoding="utf-8")  # 3 bytes each
    assert project_instructions(agents, within=tmp_path) == "世" * AGENTS_MAX_CHARS


def test_no_agents_md_and_a_directory_named_so_are_nothing(tmp_path: Path) -> None:
    assert project_instructions(tmp_path / "AGENTS.md", within=tmp_path) is None
    (tmp_path / "AGENTS.md").mkdir()
    assert project_instructions(tmp_path / "AGENTS.md", within=tmp_path) is None


# A project's AGENTS.md must lie in the workspace, as any file a tool reads: a cloned repository
# commits a symlink to ~/.ssh/id_ed25519 or to your $DSH_HOME/config.toml as easily as a file.

MARKER = "sk-OUTSIDE_MARKER_0123456789"
OUTSIDE_WARNING = (
    "left out of the system prompt: it leads outside the workspace "
    "(a symlink on its way points out of it)"
)


def _workspace_and_secret(tmp_path: Path) -> tuple[Path, Path]:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    secret = outside / "config.toml"
    secret.write_text(f'[provider]\napi_key = "{MARKER}"\n')
    return workspace, secret


@pytest.mark.parametrize("relative", [True, False], ids=["relative", "absolute"])
def test_an_agents_md_leading_outside_the_workspace_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, relative: bool
) -> None:
    workspace, secret = _workspace_and_secret(tmp_path)
    agents = workspace / "AGENTS.md"
    agents.symlink_to(Path("../outside/config.toml") if relative else secret)

    prompt = system_prompt(workspace, BENCH_ENVIRONMENT)

    assert MARKER not in prompt and "Project instructions" not in prompt
    assert warnings_of(caplog) == [f"{agents} {OUTSIDE_WARNING}"]
    assert str(secret) not in warnings_of(caplog)[0]  # never where it leads


def test_an_agents_md_in_a_directory_leading_outside_is_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The symlink is a directory on the way (``docs`` → outside), not the file itself."""
    workspace, secret = _workspace_and_secret(tmp_path)
    (secret.parent / "AGENTS.md").write_text(MARKER)
    (workspace / "docs").symlink_to(secret.parent)
    (workspace / "AGENTS.md").symlink_to("docs/AGENTS.md")

    assert MARKER not in system_prompt(workspace, BENCH_ENVIRONMENT)
    assert warnings_of(caplog) == [f"{workspace / 'AGENTS.md'} {OUTSIDE_WARNING}"]


def test_an_agents_md_symlinked_inside_the_workspace_is_still_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "docs" / "agents.md").write_text("Run make test before you finish.\n")
    (workspace / "AGENTS.md").symlink_to("docs/agents.md")

    prompt = system_prompt(workspace, BENCH_ENVIRONMENT)

    assert "Project instructions from AGENTS.md:\nRun make test before you finish." in prompt
    assert warnings_of(caplog) == []


def test_a_workspace_reached_through_a_symlink_still_reads_its_agents_md(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The workspace is compared as it resolves, so a workspace opened by a symlinked path (a
    ``~/src`` link to another disk) is no escape from itself."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "AGENTS.md").write_text("Be brief.\n")
    (tmp_path / "link").symlink_to(real)

    assert "Be brief." in system_prompt(tmp_path / "link", BENCH_ENVIRONMENT)
    assert warnings_of(caplog) == []
