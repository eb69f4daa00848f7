"""An older dsh recorded a base URL's user and password and a secret query value whole in a
``session/settings`` event. ``dsh sessions export --format jsonl`` and ``--format upstream``
write that record as this dsh records one (the two URLs masked, ``as_recorded_today``, as
``--view events`` prints it), every other line as before; the log is not rewritten and each
export still imports."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from dsh.agent import session_settings as ss
from dsh.cli.main import cli
from dsh.config import CompactionSettings, ProviderSettings, Settings
from dsh.events import SessionSettings, encode_event
from dsh.store import EventStore, JsonlStore
from dsh.surface import Session
from tests.helpers import append_chat_turn

SECRETS = ("s3cret", "KEY1", "T0K2")
LOGGED_URL = "http://alice:s3cret@127.0.0.1:9/v1?api_key=KEY1&x=1"
LOGGED_SUMMARIZER_URL = "http://127.0.0.1:9/v2?token=T0K2"
SHOWN_URL = "http://127.0.0.1:9/v1?api_key=***&x=1"
SHOWN_SUMMARIZER_URL = "http://127.0.0.1:9/v2?token=***"


def older_record(workspace: str) -> SessionSettings:
    """A ``session/settings`` record as an older dsh wrote it: the URLs' secrets whole."""
    snapshot = _today(workspace)
    return msgspec.structs.replace(
        snapshot,
        base_url=LOGGED_URL,
        compaction=msgspec.structs.replace(
            snapshot.compaction, summarizer_base_url=LOGGED_SUMMARIZER_URL
        ),
    )


def _today(workspace: str) -> SessionSettings:
    config = Settings(
        provider=ProviderSettings(name="openai-compatible", model="m"),
        compaction=CompactionSettings(summarizer="m2"),
    )
    return ss.snapshot(config, "openai-compatible", "m", 32_000, workspace)


def older_session(home: Path, workspace: Path) -> str:
    """A session with a turn, then a ``session/settings`` an older dsh wrote with the secrets
    whole (a reopen's record), then one as this dsh writes it."""
    store = JsonlStore(home)
    session = Session(store.create(cwd=str(workspace)))
    append_chat_turn(session, "hi", "hello")
    session.append(older_record(str(workspace)))
    session.append(_today(str(workspace)))
    session.close()
    return session.id


def append_older_record(store: EventStore, session_id: str) -> None:
    """One more such record, appended as another process would."""
    with Session.open(store, session_id, writable=True) as session:
        session.append(older_record(session.header.cwd))


def no_secret(text: str) -> None:
    assert not [secret for secret in SECRETS if secret in text], text


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def _dsh(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_jsonl_export_masks_an_older_records_secrets_and_still_imports(
    home: Path, tmp_path: Path
) -> None:
    sid = older_session(home, tmp_path)
    log = home / "sessions" / sid / "session.jsonl"
    logged = log.read_text()
    assert "KEY1" in logged and "s3cret" in logged  # what the older dsh wrote

    exported = _dsh("sessions", "export", sid, "--format", "jsonl")
    no_secret(exported)
    header, *lines = [json.loads(line) for line in exported.splitlines()]
    assert header["id"] == sid
    (recorded, _today_record) = [line for line in lines if line["type"] == "session/settings"]
    first = recorded["data"]
    assert first["baseUrl"] == SHOWN_URL
    assert first["compaction"]["summarizerBaseUrl"] == SHOWN_SUMMARIZER_URL
    # but for the two URLs, every line is the event as logged
    first["baseUrl"] = LOGGED_URL
    first["compaction"]["summarizerBaseUrl"] = LOGGED_SUMMARIZER_URL
    events = Session.open(JsonlStore(home), sid).events
    assert lines == [json.loads(encode_event(event)) for event in events]
    assert log.read_text() == logged  # the log is not rewritten

    dump = tmp_path / "export.jsonl"
    dump.write_text(exported)
    _dsh("sessions", "import", str(dump), "--id", "again")
    assert len(Session.open(JsonlStore(home), "again").events) == len(events)


def test_the_upstream_export_masks_an_older_records_secrets_and_still_imports(
    home: Path, tmp_path: Path
) -> None:
    sid = older_session(home, tmp_path)
    exported = _dsh("sessions", "export", sid, "--format", "upstream")
    no_secret(exported)
    rows = [json.loads(line) for line in exported.splitlines()]
    (recorded, _today) = [row for row in rows if row.get("type") == "session/settings"]
    assert recorded["ignorable"] is True
    assert recorded["data"]["baseUrl"] == SHOWN_URL
    assert recorded["data"]["compaction"]["summarizerBaseUrl"] == SHOWN_SUMMARIZER_URL

    dump = tmp_path / "export.upstream.jsonl"
    dump.write_text(exported)
    _dsh("sessions", "import", str(dump), "--id", "again")
    assert Session.open(JsonlStore(home), "again").events
