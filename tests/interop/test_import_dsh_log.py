"""``dsh sessions import`` of a dsh log: ``export --format jsonl`` (or the store's own sealed
``session.jsonl``) comes back as a session that opens and continues. It keeps its id when the id
is free, takes a fresh one when a session has it, and is as untrusted as a foreign log: its
route is dropped and its workspace is the import's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.main import cli
from dsh.events import SessionSettingsEvent, encode_event
from dsh.store import JsonlStore
from dsh.surface import Session


@pytest.fixture
def home(tmp_path, monkeypatch):
    for key in list(os.environ):
        if key.startswith("DSH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def run(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def scripted_session(tmp_path: Path, *replies: str, session: str | None = None) -> str:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": r} for r in replies]))
    args = ["run", "--script", str(script), "--json"]
    args += ["--session", session] if session else []
    result = run(*args, "say hi")
    assert result.exit_code == 0, result.output
    return session or json.loads(result.output.splitlines()[0])["session"]


def events(home: Path, session_id: str) -> list[bytes]:
    with Session.open(JsonlStore(home), session_id) as session:
        return [encode_event(e) for e in session.events]


def without_route(encoded: list[bytes]) -> list[bytes]:
    return [line for line in encoded if b'"session/settings"' not in line]


def test_an_export_imports_back_under_its_own_id_and_continues(home, tmp_path, monkeypatch):
    ident = scripted_session(tmp_path, "hello there")
    before = events(home, ident)
    out = tmp_path / "s.jsonl"
    assert run("sessions", "export", ident, "--format", "jsonl", "-o", str(out)).exit_code == 0
    other = tmp_path / "other-home"  # another machine, or the session deleted since
    monkeypatch.setenv("DSH_HOME", str(other))
    result = run("sessions", "import", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        f"imported dsh session {ident} as session {ident} ({len(before)} events from "
        f"{len(before) + 1} lines)"
    )
    assert "warning: dropped the route the log recorded (provider scripted" in result.output
    after = events(other, ident)
    assert without_route(after) == without_route(before)
    with Session.open(JsonlStore(other), ident) as session:
        (settings,) = session.of_type(SessionSettingsEvent)
        assert (settings.data.provider, settings.data.model) == ("", "")
        assert session.header.cwd == str(tmp_path)
    scripted_session(tmp_path, "unused", "carried on", session=ident)  # it runs on
    assert "Assistant: carried on" in run("sessions", "show", ident).output


def test_an_export_whose_id_is_taken_gets_a_fresh_id(home, tmp_path):
    ident = scripted_session(tmp_path, "hello there")
    out = tmp_path / "s.jsonl"
    run("sessions", "export", ident, "--format", "jsonl", "-o", str(out))
    result = run("sessions", "import", str(out))
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    fresh = first.split(" as session ")[1].split()[0]
    assert fresh != ident and first.startswith(f"imported dsh session {ident} as session ")
    assert result.output.splitlines()[1] == (
        f"a session {ident} exists already: given a new id (--id ID chooses one)"
    )
    assert without_route(events(home, fresh)) == without_route(events(home, ident))
    assert run("sessions", "import", str(out), "--id", ident).exit_code != 0  # --id is exact


def test_the_stores_sealed_log_imports_and_a_changed_byte_is_refused(home, tmp_path):
    ident = scripted_session(tmp_path, "hello there")
    raw = (home / "sessions" / ident / "session.jsonl").read_bytes()
    assert b'"crc":"' in raw
    sealed = tmp_path / "sealed.jsonl"
    sealed.write_bytes(raw)
    result = run("sessions", "import", str(sealed), "--id", "copy")
    assert result.exit_code == 0, result.output
    assert without_route(events(home, "copy")) == without_route(events(home, ident))
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(raw.replace(b"hello there", b"hello THERE"))
    result = CliRunner().invoke(cli, ["sessions", "import", str(damaged), "--id", "bad"])
    assert result.exit_code == 1
    assert f"{damaged}: line " in result.output and "checksum mismatch" in result.output
    assert not (home / "imports" / "bad").exists() and not (home / "sessions" / "bad").exists()
