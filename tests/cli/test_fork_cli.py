"""``dsh sessions fork``: ``--turns`` lists the turns and their prompts; ``--before-turn N``
makes a copy up to turn N, says its id and hands back turn N's prompt; the copy continues with
``dsh run --session``; a turn that is not there is one line, exit 2, and nothing is made.
``--turns`` lists what was typed (not the ``!cmd`` output sent ahead), numbers aligned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.main import cli
from dsh.store import JsonlStore
from dsh.transcript.shell_blocks import shell_block
from tests.helpers import append_chat_turn, new_session


def test_fork_lists_turns_and_copies_up_to_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"entries": [{"text": "one done"}, {"text": "two done"}]}))
    runner = CliRunner()
    first = runner.invoke(cli, ["run", "--script", str(script), "do one"])
    assert first.exit_code == 0, first.output
    sid = first.output.strip().rsplit("session: ", 1)[1].split()[0]
    again = runner.invoke(cli, ["run", "--script", str(script), "--session", sid, "do two"])
    assert again.exit_code == 0, again.output

    listed = runner.invoke(cli, ["sessions", "fork", sid, "--turns"])
    assert listed.output.splitlines() == ["turn 1  do one", "turn 2  do two"]

    missing = runner.invoke(cli, ["sessions", "fork", sid, "--before-turn", "5"])
    assert missing.exit_code == 2
    assert "no turn 5 started by a prompt (its turns with one: 1, 2)" in missing.output
    listed_ids = runner.invoke(cli, ["sessions", "list", "--json"])
    assert len(json.loads(listed_ids.output)) == 1  # nothing made

    made = runner.invoke(cli, ["sessions", "fork", sid, "--before-turn", "2"])
    assert made.exit_code == 0, made.output
    lines = made.output.splitlines()
    fork_id = lines[-1].removeprefix("Continue it: dsh --resume ")
    assert f"Forked session {sid} before turn 2 into {fork_id}" in lines[0]
    assert lines[1:3] == ["The prompt of turn 2, to send again or change:", "do two"]
    shown = runner.invoke(cli, ["sessions", "show", fork_id])
    assert "do one" in shown.output and "do two" not in shown.output
    titles = {
        row["id"]: row["title"]
        for row in json.loads(runner.invoke(cli, ["sessions", "list", "--json"]).output)
    }
    assert titles[fork_id] == "do one (fork)"


def test_turns_lists_what_was_typed_aligned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    store = JsonlStore(tmp_path / "home")
    with new_session(store, cwd=str(tmp_path)) as session:
        for n in range(1, 11):
            prompt = f"prompt {n}"
            if n == 9:  # sent after a ``!cmd``: its output went ahead of what was typed
                prompt = (
                    shell_block("echo CMDOUT-77", "CMDOUT-77\n", failed=False) + "\n\n" + prompt
                )
            append_chat_turn(session, prompt, f"reply {n}")
        sid = session.id
    listed = CliRunner().invoke(cli, ["sessions", "fork", sid, "--turns"])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0] == "turn  1  prompt 1"
    assert lines[8:] == ["turn  9  prompt 9", "turn 10  prompt 10"]
