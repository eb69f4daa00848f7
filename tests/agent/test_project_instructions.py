"""AGENTS.md in the system prompt (``dsh.agent.prompt.project_instructions``): read as UTF-8 and
cut at ``AGENTS_MAX_CHARS``; a file that cannot be instructions is left out with one warning
instead of putting garbage into every request."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from dsh.agent.prompt import AGENTS_MAX_CHARS, project_instructions


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_binary_agents_md_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_bytes(os.urandom(4096) + b"\x00" + os.urandom(4096))
    assert project_instructions(agents) is None
    assert warnings_of(caplog) == [f"{agents} left out of the system prompt: it is a binary file"]


def test_an_agents_md_that_is_not_utf8_is_left_out_naming_the_byte(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_bytes(b"Run the tests.\n" + "Café".encode("latin-1"))
    assert project_instructions(agents) is None
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
    assert project_instructions(agents) is None
    assert warnings_of(caplog) == [f"{agents} left out of the system prompt: Permission denied"]


def test_a_long_agents_md_is_cut_at_the_limit_even_inside_a_multibyte_character(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("é" * (AGENTS_MAX_CHARS * 3), encoding="utf-8")  # 2 bytes each
    text = project_instructions(agents)
    assert text == "é" * AGENTS_MAX_CHARS + "\n[AGENTS.md truncated]"
    assert warnings_of(caplog) == []


def test_an_agents_md_of_exactly_the_limit_is_whole(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("世" * AGENTS_MAX_CHARS, encoding="utf-8")  # 3 bytes each
    assert project_instructions(agents) == "世" * AGENTS_MAX_CHARS


def test_no_agents_md_and_a_directory_named_so_are_nothing(tmp_path: Path) -> None:
    assert project_instructions(tmp_path / "AGENTS.md") is None
    (tmp_path / "AGENTS.md").mkdir()
    assert project_instructions(tmp_path / "AGENTS.md") is None
