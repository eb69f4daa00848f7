"""``dsh sessions list|show|export`` against a real DSH_HOME on disk."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.context import fail
from dsh.cli.main import cli
from dsh.errors import LogCorruptError
from dsh.store.integrity import unseal
from dsh.transcript import COMPACTION_MARKER

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sessions" / "compaction-basic.jsonl"
FIXTURE_ID = json.loads(FIXTURE.read_text().splitlines()[0])["id"]
EXPORT_HEAD = f"# What is in notes.txt?\n\n- Session `{FIXTURE_ID}`, started "


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    target = home / "sessions" / FIXTURE_ID
    target.mkdir(parents=True)
    shutil.copy(FIXTURE, target / "session.jsonl")
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_list_filters_by_directory_unless_all(home):
    assert "no sessions in" in run("sessions", "list").output
    listed = run("sessions", "list", "--all")
    assert listed.exit_code == 0
    assert FIXTURE_ID in listed.output and "/work/project" in listed.output


def test_list_shows_each_session_title_and_size(home):
    (line,) = [x for x in run("sessions", "list", "--all").output.splitlines() if FIXTURE_ID in x]
    assert "What is in notes.txt?" in line  # the first prompt is the title
    assert " turns  " in line


def test_list_json_is_one_array_of_the_listed_sessions_and_nothing_else(home):
    listed = CliRunner().invoke(cli, ["sessions", "list", "--all", "--json"])
    assert listed.exit_code == 0
    (record,) = json.loads(listed.stdout)  # stdout holds the array alone
    assert record["id"] == FIXTURE_ID and record["title"] == "What is in notes.txt?"
    assert record["cwd"] == "/work/project" and record["trusted"] is False
    assert record["turns"] > 0 and record["updatedAt"] >= record["createdAt"]
    assert "unreadable" not in record
    assert json.loads(run("sessions", "list", "--json").output) == []  # none started here


def test_the_workspace_trust_line_is_said_only_where_a_project_config_is_on_stderr(home):
    listed = CliRunner().invoke(cli, ["sessions", "list"])
    assert "trusted" not in listed.stdout + listed.stderr  # no project config: nothing to trust
    (Path.cwd() / ".dsh").mkdir()
    (Path.cwd() / ".dsh" / "config.toml").write_text("")
    listed = CliRunner().invoke(cli, ["sessions", "list"])
    assert "trusted" not in listed.stdout
    assert listed.stderr == (
        f"workspace {Path.cwd()}: its .dsh/config.toml is not trusted (see `dsh trust`)\n"
    )


def test_a_repeat_list_reads_the_summary_cache_the_first_one_wrote(home):
    first = run("sessions", "list", "--all").output
    cache = home / "cache" / "session-summaries-jsonl.json"
    assert FIXTURE_ID.encode() in cache.read_bytes()
    assert run("sessions", "list", "--all").output == first
    cache.write_bytes(b"not a cache")  # a damaged cache is rebuilt, never an error
    assert run("sessions", "list", "--all").output == first
    assert FIXTURE_ID.encode() in cache.read_bytes()


def test_show_transcript_renders_originals_and_one_marker_but_no_checkpoint_payload(home):
    result = run("sessions", "show", FIXTURE_ID, "--view", "transcript")
    assert result.exit_code == 0
    out = result.output
    assert "User: What is in notes.txt?" in out
    assert "[tool call: read_file(" in out
    assert "Tool result: " in out
    assert out.count(COMPACTION_MARKER) == 1
    assert "This is a summary of the earlier" not in out
    assert out.index("Anything else?") < out.index(COMPACTION_MARKER) < out.index("Remind me")


def test_show_surface_shows_the_checkpoint_instead_of_the_shadowed_messages(home):
    out = run("sessions", "show", FIXTURE_ID, "--view", "surface").output
    assert "[state checkpoint]" in out and "— state" in out and "— tail" in out
    assert "This is a summary of the earlier" in out
    assert "What is in notes.txt?" not in out
    assert "Remind me what the note said." in out


def test_show_events_prints_the_stored_lines_byte_for_byte(home):
    out = run("sessions", "show", FIXTURE_ID, "--view", "events").output
    stored = FIXTURE.read_text().splitlines()[1:]
    assert out.splitlines() == stored


def test_export_jsonl_reproduces_the_file_exactly(home, tmp_path):
    target = tmp_path / "out.jsonl"
    assert (
        run("sessions", "export", FIXTURE_ID, "--format", "jsonl", "-o", str(target)).exit_code == 0
    )
    assert target.read_bytes() == FIXTURE.read_bytes()


def test_export_markdown_has_sections_and_the_marker(home):
    out = run("sessions", "export", FIXTURE_ID, "--format", "md").output
    assert out.startswith(EXPORT_HEAD)
    assert "### User\n\nWhat is in notes.txt?" in out
    assert "#### `read_file` `notes.txt`" in out  # a call's section: what it read, then the text
    assert f"> {COMPACTION_MARKER}" in out


def test_export_defaults_to_markdown(home):
    default = run("sessions", "export", FIXTURE_ID)
    assert default.exit_code == 0
    assert default.output == run("sessions", "export", FIXTURE_ID, "--format", "md").output
    assert default.output.startswith(EXPORT_HEAD)


@pytest.mark.parametrize(
    "where",
    [
        "sessions/{id}/session.jsonl",  # the session's own log
        "sessions/{id}/../{id}/session.jsonl",
        "sessions/another/session.jsonl",
        "dsh.sqlite3",
        "dsh.sqlite3-wal",
    ],
)
@pytest.mark.parametrize("fmt", ["md", "jsonl"])
def test_export_into_the_session_store_is_refused_and_the_log_kept(home, where, fmt):
    log = home / "sessions" / FIXTURE_ID / "session.jsonl"
    before = log.read_bytes()
    target = home / where.format(id=FIXTURE_ID)
    result = CliRunner().invoke(
        cli, ["sessions", "export", FIXTURE_ID, "--format", fmt, "-o", str(target)]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dsh: error: -o {target} is inside dsh's session store")
    assert log.read_bytes() == before
    assert run("sessions", "show", FIXTURE_ID).exit_code == 0
    assert not (home / "dsh.sqlite3").exists() and not (home / "sessions" / "another").exists()


def test_export_into_a_home_directory_outside_the_store_is_fine(home):
    target = home / "exports" / "out.md"
    target.parent.mkdir()
    assert run("sessions", "export", FIXTURE_ID, "-o", str(target)).exit_code == 0
    assert target.read_text().startswith(EXPORT_HEAD)


def test_a_unique_id_prefix_is_enough(home):
    assert run("sessions", "show", FIXTURE_ID[:12]).exit_code == 0


def test_unknown_session_is_one_line_on_stderr_with_exit_1(home):
    result = CliRunner().invoke(cli, ["sessions", "show", "nope"])
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.startswith("dsh: error: no session 'nope'")


def test_an_ambiguous_id_exits_like_an_unknown_one_and_says_how_many_match(home):
    from dsh.store import JsonlStore

    store = JsonlStore(home)
    for _ in range(2):
        store.create(cwd="/w").close()
    prefix = "20"  # every id starts with its creation time
    ambiguous = CliRunner().invoke(cli, ["sessions", "show", prefix])
    unknown = CliRunner().invoke(cli, ["sessions", "show", "nope"])
    assert ambiguous.exit_code == unknown.exit_code == 1
    assert "is ambiguous: 3 sessions match" in ambiguous.stderr
    assert ambiguous.stderr.count("\n") == 1


def test_corrupt_log_is_reported_in_one_line_naming_the_line(home):
    path = home / "sessions" / FIXTURE_ID / "session.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[5] = b"{garbage"
    path.write_bytes(b"\n".join(lines))
    result = CliRunner().invoke(cli, ["sessions", "show", FIXTURE_ID])
    assert result.exit_code == 1
    assert "line 6" in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.count(str(path)) == 1  # the path once
    assert f"(try `dsh sessions repair {FIXTURE_ID}`)" in result.stderr


def test_a_log_edited_in_place_after_a_listing_is_listed_unreadable_with_the_repair_hint(home):
    """The summary cache must not keep showing a session whose log no longer loads: a byte
    changed in place (same size) after the cache was written."""
    run("sessions", "list", "--all")  # fills the summary cache
    path = home / "sessions" / FIXTURE_ID / "session.jsonl"
    data = bytearray(path.read_bytes())
    at = data.rindex(b"\n", 0, data.index(b"What is in notes.txt?")) + 1
    data[at] = ord("X")  # the line's opening brace: it no longer decodes
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    (line,) = [x for x in run("sessions", "list", "--all").output.splitlines() if FIXTURE_ID in x]
    assert line.startswith(f"{FIXTURE_ID}  UNREADABLE: line ") and " turns" not in line
    assert line.endswith(f"(try `dsh sessions repair {FIXTURE_ID}`)")


def test_a_copied_session_directory_is_listed_once_as_a_copy_not_twice_as_one_id(home):
    """``cp -r ID ID.bak`` in the store: the id was listed twice and every prefix of it was
    ambiguous between two equal ids. The copy is listed as what it is, without a repair hint
    (its log is whole: repair cannot help)."""
    sessions = home / "sessions"
    shutil.copytree(sessions / FIXTURE_ID, sessions / f"{FIXTURE_ID}.bak")
    lines = run("sessions", "list", "--all").output.splitlines()
    assert sum(line.startswith(f"{FIXTURE_ID}  ") for line in lines) == 1
    (copy,) = [line for line in lines if line.startswith(f"{FIXTURE_ID}.bak")]
    assert f"UNREADABLE: its log is session {FIXTURE_ID}, not {FIXTURE_ID}.bak" in copy
    assert "repair" not in copy
    assert run("sessions", "show", FIXTURE_ID).exit_code == 0


def test_a_store_with_only_an_unreadable_session_does_not_also_say_no_sessions(home):
    sessions = home / "sessions"
    shutil.move(sessions / FIXTURE_ID, sessions / f"{FIXTURE_ID}.bak")
    lines = run("sessions", "list", "--all").output.splitlines()
    assert [line.split("  ")[0] for line in lines] == [f"{FIXTURE_ID}.bak"]
    assert "UNREADABLE" in lines[0]


def test_bad_view_is_a_usage_error_with_exit_2(home):
    assert CliRunner().invoke(cli, ["sessions", "show", FIXTURE_ID, "--view", "x"]).exit_code == 2


def test_console_script_prints_version_and_help():
    exe = Path(sys.executable).with_name("dsh")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == "dsh, version 0.1.0"
    helped = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True)
    assert "sessions" in helped.stdout


def test_with_the_sqlite_backend_list_says_where_the_jsonl_sessions_are(home, monkeypatch):
    monkeypatch.setenv("DSH_STORE_BACKEND", "sqlite")
    out = run("sessions", "list", "--all").output
    assert "no sessions" in out
    assert f"1 more session(s) in the jsonl store ({home / 'sessions'})" in out
    assert "dsh sessions migrate --to sqlite" in out


def test_migrate_moves_sessions_both_ways_with_identical_events(home, monkeypatch):
    events = run("sessions", "show", FIXTURE_ID, "--view", "events").output
    moved = run("sessions", "migrate", "--to", "sqlite")
    assert moved.exit_code == 0
    assert moved.output.startswith(f"moved 1 session(s) from {home / 'sessions'} to ")
    assert not (home / "sessions" / FIXTURE_ID / "session.jsonl").exists()
    assert "1 more session(s) in the sqlite store" in run("sessions", "list", "--all").output
    monkeypatch.setenv("DSH_STORE_BACKEND", "sqlite")
    assert run("sessions", "show", FIXTURE_ID, "--view", "events").output == events
    assert FIXTURE_ID in run("sessions", "list", "--all").output
    back = run("sessions", "migrate", "--to", "jsonl")
    assert back.exit_code == 0 and back.output.startswith("moved 1 session(s)")
    assert "no sessions" in run("sessions", "list", "--all").output
    stored = (home / "sessions" / FIXTURE_ID / "session.jsonl").read_bytes().split(b"\n")[:-1]
    # the same header and event bytes as the original file, now each with its CRC seal
    assert [unseal(line)[0] for line in stored] == FIXTURE.read_bytes().split(b"\n")[:-1]


def test_migrate_leaves_a_session_that_loads_with_a_warning_where_it_is(home):
    path = home / "sessions" / FIXTURE_ID / "session.jsonl"
    path.write_bytes(path.read_bytes() + b'{"type":"turn/st')  # a torn last line
    before = path.read_bytes()
    result = CliRunner().invoke(cli, ["sessions", "migrate", "--to", "sqlite"])
    assert result.exit_code == 1
    assert f"{FIXTURE_ID}: not moved: it loads with a warning" in result.output
    assert path.read_bytes() == before
    assert "moved 0 session(s)" in result.output


def test_stats_and_the_transcript_and_events_views_read_the_log_without_folding_a_surface(
    home, monkeypatch
):
    expected = {
        argv: run("sessions", *argv, FIXTURE_ID).output
        for argv in (("stats",), ("show",), ("show", "--view", "events"))
    }

    def no_fold(*args, **kwargs):
        raise AssertionError("the surface was folded")

    monkeypatch.setattr("dsh.surface.Session.__init__", no_fold)
    for argv, output in expected.items():
        result = run("sessions", *argv, FIXTURE_ID)
        assert result.exit_code == 0 and result.output == output
    assert "cache-hit ratio" in expected[("stats",)]
    assert COMPACTION_MARKER in expected[("show",)]


def test_a_session_written_by_a_newer_dsh_is_not_offered_repair(home):
    """An event type this version lacks is not damage: `repair` would drop the newer events,
    so the listing says a newer dsh is needed and suggests no repair."""
    path = home / "sessions" / FIXTURE_ID / "session.jsonl"
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type":"future/thing","seq":28,"time":1790000000000,"data":{}}\n')
    (line,) = [x for x in run("sessions", "list", "--all").output.splitlines() if FIXTURE_ID in x]
    assert line.startswith(f"{FIXTURE_ID}  UNREADABLE: unknown event type 'future/thing' at ")
    assert "written by a newer or foreign harness" in line and "repair" not in line


def test_repair_that_cannot_salvage_a_log_does_not_tell_you_to_run_repair(home):
    path = home / "sessions" / FIXTURE_ID / "session.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[0] = b"{not a header"
    path.write_bytes(b"\n".join(lines))
    result = CliRunner().invoke(cli, ["sessions", "repair", FIXTURE_ID])
    assert result.exit_code == 1 and "line 1" in result.stderr
    assert "try `dsh sessions repair" not in result.stderr


@pytest.mark.parametrize(
    ("message", "session"),
    [
        (
            "/h/sessions/20260101-000000-000-abcdef/session.jsonl: line 5: bad",
            "20260101-000000-000-abcdef",
        ),
        (
            "/h/dsh.sqlite3: session 20260101-000000-000-abcdef: seq 4: bad",
            "20260101-000000-000-abcdef",
        ),
        ("somewhere: bad", "ID"),
    ],
)
def test_a_corrupt_log_error_names_the_repair_command_for_its_session(capsys, message, session):
    with pytest.raises(SystemExit):
        fail(LogCorruptError(message))
    assert capsys.readouterr().err.strip().endswith(f"(try `dsh sessions repair {session}`)")
