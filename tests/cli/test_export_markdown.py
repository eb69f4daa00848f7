"""``dsh sessions export --format md``: a session recorded with real tools, as people read it.

The session is made by ``dsh run`` with a scripted model and the real tools in a fresh
workspace, then exported; the Markdown is compared with ``golden/export.md`` (the session id,
start time and workspace, which change each run, aside). ``UPDATE_GOLDEN=1`` rewrites the
golden file — read the diff before committing it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.main import cli

GOLDEN = Path(__file__).parent / "golden" / "export.md"
SCRIPT = {
    "entries": [
        {
            "text": "Let me look first.",
            "toolCalls": [
                {"name": "read_file", "arguments": {"path": "calc.py"}},
                {"name": "bash", "arguments": {"command": "echo `uname -s` >/dev/null; exit 3"}},
            ],
        },
        {
            "toolCalls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "calc.py", "old": "a - b", "new": "a + b"},
                },
                {
                    "name": "write_file",
                    "arguments": {"path": "test_calc.py", "content": "assert 1 + 1 == 2\n"},
                },
                {"name": "history_search", "arguments": {"query": "a `tick` and *stars*"}},
            ],
        },
        {"text": "Fixed `add`.\n\n- it adds now"},
    ]
}


@pytest.fixture
def exported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    runner = CliRunner()
    ran = runner.invoke(
        cli,
        ["run", "--script", str(script), "--yes", "--cwd", str(workspace), "fix add"],
        catch_exceptions=False,
    )
    assert ran.exit_code == 0, ran.output
    session_id = re.search(r"session: (\S+)", ran.output + (ran.stderr or ""))
    assert session_id is not None, ran.output
    out = runner.invoke(cli, ["sessions", "export", session_id.group(1)], catch_exceptions=False)
    assert out.exit_code == 0
    started = re.search(r"started (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", out.output)
    assert started is not None, out.output
    return (
        out.output.replace(session_id.group(1), "SESSION")
        .replace(started.group(1), "DATE")
        .replace(str(workspace.resolve()), "WORKSPACE")
    )


def test_an_export_reads_as_the_golden_file(exported: str) -> None:
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(exported)
    assert exported == GOLDEN.read_text()


def test_the_export_opens_with_the_title_and_where_and_when_the_session_ran(
    exported: str,
) -> None:
    head = exported.split("\n\n### User")[0]
    assert head == (
        "# fix add\n\n"
        "- Session `SESSION`, started DATE UTC in `WORKSPACE`\n"
        "- Model: `scripted/scripted`"
    )


def test_each_call_has_its_section_with_what_it_is_about_and_its_result(exported: str) -> None:
    assert "#### `read_file` `calc.py`\n\n```\n1\tdef add(a, b):" in exported
    # a command is an sh block, backticks and all; its failure is said
    assert "#### `bash`\n\n```sh\necho `uname -s` >/dev/null; exit 3\n```\n\n*(error)*" in exported
    assert "[exit code 3]" in exported
    # an edit is the diff it logged, a created file its content
    assert "```diff\n--- a/calc.py\n+++ b/calc.py\n" in exported
    assert "-    return a - b\n+    return a + b" in exported
    assert "#### `write_file` `test_calc.py`" in exported
    assert "```python\nassert 1 + 1 == 2\n```" in exported
    # inline code holding a backtick gets a longer run of them
    assert '#### `history_search` ``"a `tick` and *stars*"``' in exported
    assert '"name":' not in exported  # no call is shown as its arguments' JSON
