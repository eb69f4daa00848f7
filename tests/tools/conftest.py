"""Shared fixtures: a workspace directory inside tmp_path (so tmp_path itself is "outside")."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.tools.base import ToolContext


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret\n")
    return out


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace.resolve(), session_id="s-test", call_id="call-1")
