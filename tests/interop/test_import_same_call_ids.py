"""An upstream log whose replies all number their calls from ``call_0`` (here dsh's own export
of a session whose process died during the second ``call_0``) imports unchanged; once opened,
crash repair answers the later reply's open ``call_0`` and each card pairs with its own call."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.main import cli
from dsh.events import ToolCallEvent
from dsh.store import TOOL_OUTCOME_UNKNOWN, JsonlStore
from dsh.surface import Session
from dsh.transcript import ToolResultItem, project
from tests.same_call_ids import FIRST_OUTPUT, crash_in_second_reply


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    for key in list(os.environ):
        if key.startswith("DSH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def test_an_imported_log_reusing_call_0_is_repaired_and_paired_call_by_call(
    home: Path, tmp_path: Path
) -> None:
    sid = crash_in_second_reply(JsonlStore(home), tmp_path / "ws")
    upstream = tmp_path / "upstream.jsonl"
    runner = CliRunner()
    exported = runner.invoke(
        cli, ["sessions", "export", sid, "--format", "upstream", "-o", str(upstream)]
    )
    assert exported.exit_code == 0, exported.output
    imported = runner.invoke(cli, ["sessions", "import", str(upstream), "--id", "imported"])
    assert imported.exit_code == 0, imported.output

    session = Session.open(JsonlStore(home), "imported", writable=True)
    calls = [e.seq for e in session.events if isinstance(e, ToolCallEvent)]
    items, _ = project(session.events)
    results = [i for i in items if isinstance(i, ToolResultItem)]
    assert [(r.call_id, r.card_seq) for r in results] == [("call_0", c) for c in calls]
    assert FIRST_OUTPUT in results[0].text and not results[0].is_error
    assert TOOL_OUTCOME_UNKNOWN in results[1].text and results[1].is_error
    assert session.tool_pairing_balanced_after(session.nodes[-1])
    session.close()
