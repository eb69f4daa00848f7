"""``dsh sessions import`` / ``export --format upstream`` on a real DSH_HOME, and an imported
session used by the transcript, the surface, the recall commands, ``dsh run`` and
``dsh compact``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.main import cli
from dsh.events import CompactionSummaryEvent, ToolResultEvent, encode_event
from dsh.store import JsonlStore
from dsh.surface import Session, checkpoint_kind
from dsh.transcript import COMPACTION_MARKER

FIXTURES = Path(__file__).parent / "fixtures"
DSH = str(Path(sys.executable).with_name("dsh"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    for key in list(os.environ):
        if key.startswith("DSH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def dsh(*args: str, home: Path, check: bool = True, **env: str):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ.update(DSH_HOME=str(home), **env)
    return subprocess.run(
        [DSH, *args],
        env=environ,
        cwd=home.parent,
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
    )


def imported(home: Path, fixture: str, session_id: str) -> str:
    result = run("sessions", "import", str(FIXTURES / fixture), "--id", session_id)
    assert result.exit_code == 0, result.output
    return result.output


def events_of(home: Path, session_id: str):
    with Session.open(JsonlStore(home), session_id) as session:
        return list(session.events)


def test_import_reports_what_it_converted_and_keeps_the_original(home):
    out = imported(home, "06-foreign-events.jsonl", "six")
    lines = out.splitlines()
    assert lines[0] == (
        "imported 0b8e1f8a-0006-4d0e-9a51-5e0c9b1f0a06 as session six (16 events from 17 lines)"
    )
    assert "kept as opaque ignorable events: agent/inbox/spliced ×1" in out
    assert "upstream:llm/retry ×1" in out and "session/title ×1, step/end" in out  # converted
    copy = home / "imports" / "six" / "original.jsonl"
    assert f"original copied to {copy}" in out
    assert copy.read_bytes() == (FIXTURES / "06-foreign-events.jsonl").read_bytes()
    assert (home / "imports" / "six" / "report.txt").read_text() == out
    assert "six" in run("sessions", "list", "--all").output


def test_a_log_without_cwd_is_imported_into_the_current_directory(home, tmp_path):
    out = imported(home, "01-header-v0.jsonl", "one")
    assert f"workspace: {tmp_path} (the log names none" in out
    assert "header field agentPreset = 'explore' has no dsh counterpart" in out
    assert run("sessions", "list").output.startswith("one  ")


def test_imported_session_renders_transcript_surface_and_answers_recall(home):
    imported(home, "03-block-summary.jsonl", "three")
    transcript = run("sessions", "show", "three").output
    assert "User: What does notes.txt say?" in transcript
    assert "Tool result: launch code: PURPLE-42" in transcript
    assert transcript.count(COMPACTION_MARKER) == 1
    assert "<compacted-summary>" not in transcript
    surface = run("sessions", "show", "three", "--view", "surface").output
    assert surface.startswith("#22 user/message (replace) — state\n[state checkpoint]")
    assert "What does notes.txt say?" not in surface
    found = run("recall", "search", "three", "holds the launch code")
    assert found.exit_code == 0
    assert "[c21 #msg 3] Assistant: It holds the launch code." in found.output
    page = run("recall", "read", "three", "c21").output
    assert "shadows conversation span #2–#14: 6 message(s)" in page
    assert "User: Anything else in there?" in page
    # the result pruned before the pass is recalled whole, as from a dsh log
    assert "Tool result: launch code: PURPLE-42" in page and "middle pruned" not in page
    assert "[c21 #msg 2] Tool result: launch code: PURPLE-42" in (
        run("recall", "search", "three", "purple-42").output
    )


def test_bad_input_is_one_line_naming_the_line_and_leaves_nothing_behind(home, tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = (FIXTURES / "03-block-summary.jsonl").read_text().splitlines()
    lines[20] = lines[20][:-5]
    bad.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(cli, ["sessions", "import", str(bad)])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert result.output.startswith(f"dsh: error: {bad}: line 21: not valid JSON")
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())
    assert not (home / "imports").exists() or not any((home / "imports").iterdir())
    surface = CliRunner().invoke(
        cli, ["sessions", "import", str(FIXTURES / "06-foreign-surface-event.jsonl")]
    )
    assert surface.exit_code == 1 and "line 8: seq 6 (note/pinned)" in surface.output
    assert "no sessions" in run("sessions", "list", "--all").output


def test_an_existing_or_unsafe_id_is_refused_before_anything_is_written(home):
    imported(home, "01-header-v0.jsonl", "same")
    before = events_of(home, "same")
    again = CliRunner().invoke(
        cli, ["sessions", "import", str(FIXTURES / "02-tool-result-role.jsonl"), "--id", "same"]
    )
    assert again.exit_code == 2 and "already exists" in again.output
    assert events_of(home, "same") == before
    unsafe = CliRunner().invoke(
        cli, ["sessions", "import", str(FIXTURES / "02-tool-result-role.jsonl"), "--id", "../x"]
    )
    assert unsafe.exit_code == 2
    assert "'--id': '../x' must start with a letter or a digit" in unsafe.output
    assert sorted(p.name for p in (home / "imports").iterdir()) == ["same"]


def test_a_compressed_log_is_refused_with_a_hint(home, tmp_path):
    packed = tmp_path / "session.jsonl.zstd"
    packed.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 8)
    result = CliRunner().invoke(cli, ["sessions", "import", str(packed)])
    assert result.exit_code == 1 and "zstd -d" in result.output


def test_a_log_saved_with_a_byte_order_mark_imports_as_without_one(home, tmp_path):
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "02-tool-result-role.jsonl").read_bytes())
    imported(home, str(marked), "marked")
    imported(home, "02-tool-result-role.jsonl", "plain")
    assert events_of(home, "marked") == events_of(home, "plain")
    kept = home / "imports" / "marked" / "original.jsonl"
    assert kept.read_bytes() == marked.read_bytes()  # the original is kept as it was


def test_round_trip_through_the_cli_gives_equal_events(home, tmp_path):
    imported(home, "04-stream-chunks.jsonl", "first")
    out = tmp_path / "exported.jsonl"
    export = run("sessions", "export", "first", "--format", "upstream", "-o", str(out))
    assert export.exit_code == 0
    assert json.loads(out.read_text().splitlines()[0])["version"] == 0
    imported(home, str(out), "second")
    assert events_of(home, "second") == events_of(home, "first")


def test_dsh_run_continues_an_imported_session_with_the_scripted_provider(home, tmp_path):
    imported(home, "04-stream-chunks.jsonl", "four")
    calls = 3  # two assistant messages and one request/error are already in the log
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "unused"}] * calls + [{"text": "Carried on."}]))
    result = dsh(
        "run",
        "--session",
        "four",
        "--cwd",
        str(tmp_path),
        "--script",
        str(script),
        "next?",
        home=home,
    )
    assert result.stdout.splitlines() == ["Carried on."]
    assert "session: four\n" in result.stderr
    events = events_of(home, "four")
    assert [encode_event(e) for e in events[:24]] == [
        encode_event(e) for e in events_of_fresh_import(tmp_path, "04-stream-chunks.jsonl")
    ]
    assert "Assistant: Carried on." in run("sessions", "show", "four").output


def events_of_fresh_import(tmp_path: Path, fixture: str):
    home = tmp_path / "fresh"
    result = dsh("sessions", "import", str(FIXTURES / fixture), "--id", "fresh", home=home)
    assert result.returncode == 0
    return events_of(home, "fresh")


def test_imported_checkpoint_is_adopted_as_state_by_the_recallable_backend(home, tmp_path):
    imported(home, "03-block-summary.jsonl", "adopt")
    with Session.open(JsonlStore(home), "adopt") as session:
        assert checkpoint_kind(session, 22) == "state"  # kind-less: legacy, counts as state
    answer = " ".join(f"Module m{i} exports handler_{i} under key opt_{i}." for i in range(40))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "unused"}] * 4 + [{"text": answer}] * 3))
    prompts = ["Describe one", "Describe two", "Describe three"]
    budgets = {
        "DSH_COMPACTION_RETAIN_TOKENS": "200",
        "DSH_COMPACTION_CHUNK_TOKENS": "400",
        "DSH_COMPACTION_STUB_TOKENS": "50",
    }
    # the imported log records no settings: its first dsh run records these budgets, and the
    # compaction below reads them from the log
    dsh(
        "run",
        "--session",
        "adopt",
        "--cwd",
        str(tmp_path),
        "--script",
        str(script),
        *prompts,
        home=home,
        **budgets,
    )
    compacted = dsh("compact", "adopt", home=home)
    assert compacted.stdout.startswith("Compacted ")
    events = events_of(home, "adopt")
    new = [e for e in events[29:] if isinstance(e, CompactionSummaryEvent)]
    state = [e for e in new if e.data.kind == "state"]
    assert len(state) == 1
    assert "launch code PURPLE-42" in state[0].data.summary  # the legacy text was the merge base
    holder = next(e for e in new if 22 in e.data.shadowed_seqs)  # the old node folded into a region
    page = run("recall", "read", "adopt", f"c{holder.seq}").output
    assert "[prior state checkpoint]" in page and "launch code PURPLE-42" in page
    export = dsh("sessions", "export", "adopt", "--format", "upstream", home=home)
    assert (
        "not expressible upstream: compaction/summary.kind has no upstream field" in export.stderr
    )
    assert "compaction/plan has no upstream counterpart" in export.stderr


def test_import_into_the_sqlite_store_works_the_same(home, monkeypatch):
    monkeypatch.setenv("DSH_STORE_BACKEND", "sqlite")
    imported(home, "03-block-summary.jsonl", "sq")
    assert (home / "dsh.sqlite3").is_file() and not (home / "sessions").exists()
    assert "c21" in run("recall", "read", "sq", "c21").output
    assert (home / "imports" / "sq" / "original.jsonl").is_file()


def test_a_store_that_fails_to_create_the_session_leaves_no_copy_behind(
    home, monkeypatch, tmp_path
):
    from dsh.errors import StoreError
    from dsh.interop import import_upstream

    class FailingStore(JsonlStore):
        def create(self, **kwargs):  # type: ignore[override]
            raise StoreError("disk full")

    with pytest.raises(StoreError, match="disk full"):
        import_upstream(
            FailingStore(home), home, FIXTURES / "01-header-v0.jsonl", cwd=str(tmp_path)
        )
    assert list((home / "imports").iterdir()) == []
    assert JsonlStore(home).list() == []


def test_the_model_recalls_imported_history_through_history_search(home, tmp_path):
    imported(home, "03-block-summary.jsonl", "recall")
    search = {"name": "history_search", "arguments": {"query": "holds the launch code"}}
    entries = [{"text": "unused"}] * 4 + [{"toolCalls": [search]}, {"text": "Found it."}]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(entries))
    result = dsh(
        "run",
        "--session",
        "recall",
        "--cwd",
        str(tmp_path),
        "--script",
        str(script),
        "What was it?",
        home=home,
    )
    assert result.stdout.splitlines()[0] == "Found it."
    results = [e for e in events_of(home, "recall")[29:] if isinstance(e, ToolResultEvent)]
    (answer,) = results
    text = answer.data.message.content[0].content[0].text  # type: ignore[union-attr]
    assert "[c21 #msg 3] Assistant: It holds the launch code." in text


def test_a_creation_time_no_calendar_can_show_is_refused_and_the_session_list_still_works(
    home, tmp_path
):
    """A header's createdAt far past year 9999 once imported under --id, and from then on
    ``dsh sessions list`` failed for every session ("Value too large for defined data type");
    without --id the import itself failed with that bare OS message."""
    imported(home, "01-header-v0.jsonl", "fine")
    lines = (FIXTURES / "02-tool-result-role.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header["createdAt"] = 10**20
    bad = tmp_path / "far.jsonl"
    bad.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    for extra in ((), ("--id", "far")):
        result = CliRunner().invoke(cli, ["sessions", "import", str(bad), *extra])
        assert result.exit_code == 1
        assert result.output.count("\n") == 1
        assert result.output.startswith(f"dsh: error: {bad}: line 1: ")
        assert "createdAt" in result.output
    listing = run("sessions", "list", "--all")
    assert listing.exit_code == 0 and "fine" in listing.output and "far" not in listing.output


@pytest.mark.parametrize(
    ("cwd", "shown"),
    [("proj/sub", "not an absolute path: 'proj/sub'"), ("/tmp/a\nb", "line break")],
)
def test_a_relative_or_multi_line_cwd_is_refused_at_import_and_nothing_is_written(
    home, tmp_path, cwd, shown
):
    """Such a workspace was imported (and broke ``sessions list`` into two lines, or resolved
    against whatever directory dsh later ran in); it is refused at import, naming the field."""
    lines = (FIXTURES / "02-tool-result-role.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header["cwd"] = cwd
    bad = tmp_path / "bad-cwd.jsonl"
    bad.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    result = CliRunner().invoke(cli, ["sessions", "import", str(bad), "--id", "bad"])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert result.output.startswith(f"dsh: error: {bad}: line 1: the session header's cwd ")
    assert shown in result.output
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())
    assert not (home / "imports").exists() or not any((home / "imports").iterdir())
    assert "no sessions" in run("sessions", "list", "--all").output


def test_a_file_that_is_not_json_is_refused_naming_line_and_column(tmp_path):
    """A text file given by mistake: msgspec's "invalid character (byte 0)" read like a NUL."""
    (tmp_path / "big.txt").write_text("Meeting notes\nsecond line\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [DSH, "sessions", "import", "big.txt"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "dsh: error: big.txt: line 1: not valid JSON (JSON is malformed: invalid character "
        "at column 1)"
    ]
