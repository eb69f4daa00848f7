"""What a log holds reaches the terminal as text, never as something the terminal acts on.

A file in a cloned repository that the model merely reads (``read_file``, ``grep``), a reply,
an imported log's header: each may hold an OSC 0 (the window's title), an OSC 52 (the
clipboard), ``ESC [ 2 J`` (clear the screen), a bell, a bare carriage return (overwrite a
line), a C1 control. Every CLI output of such text (``dsh run``'s answer, ``dsh sessions
show`` and ``export``, ``dsh recall``, ``dsh sessions import``'s report, ``dsh undo``) prints
it as ``dsh.tools.terminal_text.printable_text`` makes it: no ESC, bell or C1 byte leaves dsh,
the words around them stay, and ordinary text (tabs, emoji, accents) is untouched. The JSON
outputs keep the exact text, every control character in it escaped (``terminal_json``).

Click strips colour codes (CSI only) from what it writes to a pipe: every in-process command
here runs with ``color=True``, as on a terminal, and ``dsh run`` also runs as a real process
with its stdout a pipe.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.main import cli
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.conftest import DSH
from tests.helpers import append_tool_turn, run_session_id
from tests.recall.builders import bracket

ATTACK = "\x1b]0;PWNED_TITLE\x07\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\x1b[Hhidden"
"""An OSC 0 and an OSC 52 ended by bells, a clear screen, a cursor home, then text."""
HOSTILE = f"normal line\n{ATTACK} tail\nbare\rcr bell\x07 c1\x9b2J end\n"
PLAIN = "tabs\there, emoji 😀 👨\u200d👩\u200d👧, accents é ü\n"
"""Ordinary text: kept byte for byte."""
SHOWN = "bare\\rcr bell\\x07 c1\\x9b2J end"
"""``HOSTILE``'s last line as printed: each lone control as its escape."""
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""What a terminal would act on: every C0 and C1 control but the newline and the tab, DEL."""


def assert_inert(printed: str, *, shown: str = SHOWN, plain: str = PLAIN.rstrip("\n")) -> None:
    """``printed`` holds ``HOSTILE``'s words (its last line as ``shown``) and ``PLAIN`` but
    nothing a terminal acts on."""
    found = ACTING.search(printed)
    assert found is None, (found, printed[max(found.start() - 60, 0) : found.end() + 60])
    assert "normal line" in printed and "hidden tail" in printed and shown in printed
    assert "PWNED_TITLE" not in printed and "cm0gLXJmIH4K" not in printed
    assert plain in printed


def invoke(*args: str) -> str:
    """``dsh ARGS`` in this process, written as to a terminal (colour codes not stripped)."""
    result = CliRunner().invoke(cli, list(args), color=True, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def process_env(home: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(home)
    return environ


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """A real ``dsh run`` whose model reads a hostile file (``read_file``, ``grep``) and
    answers with hostile text: (its home, its session id, its stdout, a pipe)."""
    root = tmp_path_factory.mktemp("escapes")
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "evil.txt").write_text(HOSTILE + PLAIN)
    calls = [
        {"name": "read_file", "arguments": {"path": "evil.txt"}},
        {"name": "grep", "arguments": {"pattern": "hidden"}},
    ]
    script = root / "s.json"
    script.write_text(json.dumps([{"toolCalls": calls}, {"text": f"reply {HOSTILE}{PLAIN}"}]))
    done = subprocess.run(
        [DSH, "run", "--script", str(script), "go"],
        env=process_env(root / "home"),
        cwd=workspace,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    stdout = done.stdout.decode()
    session_id = run_session_id(done.stderr)
    yield root / "home", session_id, stdout


@pytest.fixture
def home(ran: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    for key in list(os.environ):
        if key.startswith("DSH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DSH_HOME", str(ran[0]))
    return ran[0], ran[1]


def test_dsh_run_prints_the_reply_inert_to_a_pipe(ran: tuple[Path, str, str]) -> None:
    """On a pipe click stripped the colour codes, not the OSCs and the bell."""
    _, _, stdout = ran
    assert stdout.startswith("reply normal line\n")
    assert_inert(stdout)


def test_dsh_run_prints_the_reply_inert_as_to_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": f"reply {HOSTILE}{PLAIN}"}]))
    assert_inert(invoke("run", "--script", str(script), "go"))


def test_sessions_show_prints_what_the_tools_read_and_the_reply_inert(
    home: tuple[Path, str],
) -> None:
    _, session_id = home
    shown = invoke("sessions", "show", session_id)
    assert_inert(shown)
    assert "1\tnormal line" in shown  # read_file's numbered lines, tabs kept
    assert shown.count("hidden tail") >= 3  # read_file, grep, the reply
    assert_inert(invoke("sessions", "show", session_id, "--view", "surface"))


def test_sessions_export_writes_markdown_inert_to_stdout_and_to_a_file(
    home: tuple[Path, str], tmp_path: Path
) -> None:
    _, session_id = home
    assert_inert(invoke("sessions", "export", session_id))
    out = tmp_path / "export.md"
    invoke("sessions", "export", session_id, "-o", str(out))
    assert_inert(out.read_text())


def test_the_import_report_shows_the_logs_id_workspace_and_field_names_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    fixture = Path(__file__).parents[1] / "interop" / "fixtures" / "02-tool-result-role.jsonl"
    header, *events = fixture.read_text().splitlines()
    fields = json.loads(header)
    fields.update(id=f"up-{ATTACK}", cwd=f"/tmp/a{ATTACK}b")
    fields[f"field{ATTACK}"] = 1
    log = tmp_path / "upstream.jsonl"
    log.write_text("\n".join([json.dumps(fields), *events]) + "\n")
    report = invoke("sessions", "import", str(log), "--id", "imported-1")
    assert ACTING.search(report) is None, report
    escaped = ascii(ATTACK)[1:-1]  # one-line fields, as a title shows one: each as its escape
    lines = report.splitlines()
    assert lines[0] == f"imported up-{escaped} as session imported-1 (11 events from 12 lines)"
    assert lines[2] == (
        f"workspace: {tmp_path.resolve()} (the log ran in /tmp/a{escaped}b; "
        "--cwd DIR chooses another)"
    )
    assert f"header field field{escaped} = 1 has no dsh counterpart (kept in the copy)" in lines


def test_dsh_recall_prints_a_compacted_span_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    store = JsonlStore(tmp_path / "home")
    with Session(store.create(cwd=str(tmp_path))) as session:
        turn = append_tool_turn(
            session,
            "read the notes",
            calls=[("read_file", '{"path":"evil.txt"}', HOSTILE + PLAIN)],
            final="read them",
        )
        checkpoint = bracket(
            session, turn.surface, "## Goal\nread the notes", kind="state", compaction_id="k-1"
        )
        session_id = session.id
    found = invoke("recall", "search", session_id, "hidden")  # a snippet: one line
    assert_inert(
        found,
        shown="normal line hidden tail bare cr bell\\x07 c1\\x9b2J end",
        plain=" ".join(PLAIN.split()),
    )
    assert_inert(invoke("recall", "read", session_id, checkpoint.id))


def test_dsh_undo_names_a_hostile_path_inert(tmp_path: Path) -> None:
    name = f"a{ATTACK}.txt"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "s.json"
    call = {"name": "write_file", "arguments": {"path": name, "content": "new\n"}}
    script.write_text(json.dumps([{"toolCalls": [call]}, {"text": "done"}]))
    environ = process_env(tmp_path / "home")
    for args in (["run", "--yes", "--script", str(script), "write it"], ["undo"]):
        done = subprocess.run(
            [DSH, *args], env=environ, cwd=workspace, capture_output=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
    printed = done.stdout.decode()
    assert ACTING.search(printed) is None, printed
    assert printed.splitlines()[1] == "  deleted ahidden.txt (created by the turn)"


RAW_IN_JSON = re.compile("[\x7f-\x9f\u202e]")
"""What JSON may hold unescaped that a terminal acts on (or draws reordered)."""


def test_json_outputs_hold_c1_controls_as_escapes_and_the_same_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dsh run --json`` and ``--json-stream`` and ``sessions show --view events``: JSON
    escapes the C0 controls, and now the C1 ones, DEL and bidi controls too."""
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    reply = f"reply {HOSTILE}del\x7f rtl\u202e {PLAIN}"
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": reply}, {"text": reply}]))
    logged = invoke("run", "--json", "--script", str(script), "go")
    session_id = json.loads(logged.splitlines()[0])["session"]
    streamed = invoke(
        "run", "--json-stream", "--script", str(script), "--session", session_id, "on"
    )
    events = invoke("sessions", "show", session_id, "--view", "events")
    for printed in (logged, streamed, events):
        assert RAW_IN_JSON.search(printed) is None
        assert "\x1b" not in printed and "\x07" not in printed  # JSON's own escapes
    replies = [
        event["data"]["message"]["content"][0]["text"]
        for event in map(json.loads, events.splitlines())
        if event["type"] == "assistant/message"
    ]
    assert replies == [reply, reply]  # the same values
    ends = [line for line in map(json.loads, streamed.splitlines()) if line["type"] == "turn_end"]
    assert [end["text"] for end in ends] == [reply]


def test_dsh_mcp_list_shows_a_servers_tool_description_as_one_inert_line() -> None:
    """A tool's description is a third-party server's text (not a log's): one line, each
    escape shown as its escapes, as a title is."""
    from dsh.cli.mcp import _first_line

    shown = _first_line("Adds \x1b]0;T\x07\x1b[2J numbers\x07\nsecond line")
    assert ACTING.search(shown) is None
    assert shown == "Adds \\x1b]0;T\\x07\\x1b[2J numbers\\x07"
