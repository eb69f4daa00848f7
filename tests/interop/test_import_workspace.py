"""An imported log does not choose the directory its tools run in: ``dsh sessions import`` gives
the session the directory it ran in (or ``--cwd DIR``), and reports the log's own ``cwd``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli import context
from dsh.cli.main import cli
from dsh.store import JsonlStore
from dsh.surface import Session

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def mine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in list(os.environ):
        if key.startswith("DSH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    mine = tmp_path / "mine"
    mine.mkdir()
    monkeypatch.chdir(mine)
    return mine


def log_naming(tmp_path: Path, workspace: Path) -> Path:
    """A log whose header and settings record name ``workspace`` (which exists)."""
    header, *events = (FIXTURES / "02-tool-result-role.jsonl").read_text().splitlines()
    fields = json.loads(header)
    fields["cwd"] = str(workspace)
    log = tmp_path / "foreign.jsonl"
    log.write_text("\n".join([json.dumps(fields), *events]) + "\n")
    return log


def workspace_of(tmp_path: Path, session_id: str) -> Path:
    store = JsonlStore(tmp_path / "home")
    return context.session_workspace(store, session_id, None)


def test_an_imported_session_runs_its_tools_where_it_was_imported_not_where_the_log_says(
    tmp_path: Path, mine: Path
) -> None:
    victim = tmp_path / "victim"  # e.g. a directory holding the user's keys
    victim.mkdir()
    result = CliRunner().invoke(
        cli, ["sessions", "import", str(log_naming(tmp_path, victim)), "--id", "x"]
    )
    assert result.exit_code == 0, result.output
    assert f"workspace: {mine} (the log ran in {victim}; --cwd DIR chooses another)" in (
        result.output.splitlines()
    )
    assert workspace_of(tmp_path, "x") == mine
    with Session.open(JsonlStore(tmp_path / "home"), "x") as session:
        assert session.header.cwd == str(mine)


def test_cwd_chooses_the_imported_sessions_workspace_and_a_missing_one_is_refused(
    tmp_path: Path, mine: Path
) -> None:
    chosen = tmp_path / "checkout"
    chosen.mkdir()
    log = log_naming(tmp_path, chosen)
    result = CliRunner().invoke(
        cli, ["sessions", "import", str(log), "--id", "y", "--cwd", str(chosen)]
    )
    assert result.exit_code == 0, result.output
    assert f"workspace: {chosen}" in result.output.splitlines()  # the log's own: no note
    assert workspace_of(tmp_path, "y") == chosen
    missing = CliRunner().invoke(
        cli, ["sessions", "import", str(log), "--id", "z", "--cwd", str(tmp_path / "nope")]
    )
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert not (tmp_path / "home" / "imports" / "z").exists()
