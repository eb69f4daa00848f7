"""A base URL is never said nor logged with its password or a secret query parameter
(``dsh.config.redact``): the settings-change warning of a reopen (stderr, ``--json-stream``,
the terminal UI's toast, ``dsh web``'s warning are that one line), ``dsh sessions show --view
settings``, an error naming a base URL, and the ``session/settings`` record; a reopen on the
configured endpoint still gets the configured credentials back."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import msgspec
import pytest

from dsh.agent import session_settings as ss
from dsh.agent.settings_view import describe
from dsh.config import CompactionSettings, ProviderSettings, Settings, base_url_problem, redact
from tests.cli.conftest import DSH

SECRETS = ("s3cret", "hunter2", "KEY1", "T0K2")
CONFIGURED = "http://alice:s3cret@127.0.0.1:9/v1?api_key=KEY1"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://alice:s3cret@h:8080/v1", "http://h:8080/v1"),
        ("http://h/v1?api_key=KEY1&x=1", "http://h/v1?api_key=***&x=1"),
        ("http://h/v1?X-Api-Key=a&token=b&sig=c&code=d", "http://h/v1?X-Api-Key=***&token=***&sig=***&code=d"),
        ("https://h/v1?access_token=a&api-version=2024-06-01", "https://h/v1?access_token=***&api-version=2024-06-01"),
        ("http://u:p@[::1]:8/v1?password=x", "http://[::1]:8/v1?password=***"),
    ],
)  # fmt: skip
def test_redact_drops_the_userinfo_and_masks_secret_query_values(url, shown):
    assert redact(url) == shown


@pytest.mark.parametrize(
    "url", ["http://h:8/v1", "http://h/v1?a=1&&b", "http://h/?key", "x y", None]
)
def test_redact_returns_what_has_nothing_to_hide_as_it_is(url):
    assert redact(url) is url


def _config(summarizer_url: str | None = None, base_url: str | None = None) -> Settings:
    return Settings(
        provider=ProviderSettings(name="openai-compatible", model="m", base_url=base_url),
        compaction=CompactionSettings(summarizer="m2", summarizer_base_url=summarizer_url),
    )


def _no_secret(text: str) -> None:
    assert not [secret for secret in SECRETS if secret in text], text


def test_the_warning_of_a_changed_summariser_url_says_neither_url_with_its_secrets():
    """The recorded URL with the configured credentials put back, and the flag's own."""
    recorded = ss.snapshot(_config(CONFIGURED), "openai-compatible", "m", 32_000, "/w")
    flag = "http://bob:hunter2@127.0.0.1:9/v2?token=T0K2"
    resolved = ss.effective(
        _config(CONFIGURED), recorded, {"compaction": {"summarizer_base_url": flag}}
    )
    line = ss.changed_warning("S1", resolved.changes)
    assert line == (
        "session S1: the flags change its recorded settings: compaction.summarizer_base_url "
        "http://127.0.0.1:9/v1?api_key=*** -> http://127.0.0.1:9/v2?token=***"
    )
    assert resolved.settings.compaction.summarizer_base_url == flag  # what is connected to


def test_the_warning_of_a_changed_base_url_says_it_without_its_secrets():
    recorded = ss.snapshot(_config(base_url=CONFIGURED), "openai-compatible", "m", 32_000, "/w")
    flag = "http://bob:hunter2@127.0.0.1:9/v2?token=T0K2"
    resolved = ss.effective(_config(base_url=flag), recorded, {"provider": {"base_url": flag}})
    _no_secret(ss.changed_warning("S1", resolved.changes))
    assert (
        "provider.base_url http://127.0.0.1:9/v1?api_key=*** -> " in resolved.changes[0].describe()
    )


def test_the_record_masks_a_key_in_the_query_and_a_reopen_puts_the_configured_one_back():
    config = _config(CONFIGURED, base_url=CONFIGURED)
    recorded = ss.snapshot(config, "openai-compatible", "m", 32_000, "/w")
    _no_secret(msgspec.json.encode(recorded).decode())
    assert recorded.base_url == "http://127.0.0.1:9/v1?api_key=***"
    resolved = ss.effective(config, recorded)
    assert resolved.settings.provider.base_url == CONFIGURED
    assert resolved.settings.compaction.summarizer_base_url == CONFIGURED
    assert resolved.changes == ()


def test_a_log_that_recorded_a_query_key_whole_shows_it_masked_and_reopens_on_the_config():
    """An older dsh logged ``?api_key=`` as given: the view masks it, a reopen on the same
    endpoint takes the configured URL (its key), and no flag means no warning."""
    plain = "http://127.0.0.1:9/v1?api_key=KEY1"
    snapshot = ss.snapshot(_config(), "openai-compatible", "m", 32_000, "/w")
    recorded = msgspec.structs.replace(
        snapshot,
        base_url=plain,
        compaction=msgspec.structs.replace(snapshot.compaction, summarizer_base_url=plain),
    )
    _no_secret("\n".join(describe(recorded)))
    resolved = ss.effective(_config(CONFIGURED, base_url=CONFIGURED), recorded)
    assert resolved.settings.provider.base_url == CONFIGURED
    assert resolved.settings.compaction.summarizer_base_url == CONFIGURED


def test_an_error_naming_a_refused_base_url_says_it_without_its_password():
    problem = base_url_problem("ftp://alice:s3cret@h/?token=T0K2")
    assert problem is not None
    _no_secret(problem)
    assert "'ftp://h/?token=***' has the scheme 'ftp'" in problem


def test_dsh_run_never_says_nor_logs_a_flags_url_with_its_secrets(tmp_path: Path):
    """Through the real console script: the warning on stderr, the ``--json-stream`` lines,
    the log and ``sessions show --view settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    home = tmp_path / "home"
    env["DSH_HOME"] = str(home)
    home.mkdir()
    (home / "config.toml").write_text(
        f'[compaction]\nsummarizer = "openai-compatible:m"\nsummarizer_base_url = "{CONFIGURED}"\n'
    )
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "a0"}, {"text": "a1"}]))

    def dsh(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [DSH, *args], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    first = dsh("run", "--script", str(script), "hi")
    sid = first.stderr.split("session: ", 1)[1].split()[0]
    flag = "http://bob:hunter2@127.0.0.1:9/v2?token=T0K2"
    again = dsh(
        "run", "--json-stream", "--script", str(script), "--session", sid,
        "--summarizer-base-url", flag, "again",
    )  # fmt: skip
    assert "compaction.summarizer_base_url http://127.0.0.1:9/v1?api_key=*** -> " in again.stderr
    warned = [line for line in again.stdout.splitlines() if "summarizer_base_url" in line]
    assert warned  # the warning is a line of the stream too
    shown = dsh("sessions", "show", sid, "--view", "settings").stdout
    assert "http://127.0.0.1:9/v2?token=***" in shown
    (log,) = (home / "sessions").glob(f"{sid}/session.jsonl")
    for text in (again.stderr, again.stdout, shown, log.read_text()):
        _no_secret(text)


def test_the_routes_notice_names_an_unreachable_server_without_its_secrets(tmp_path: Path):
    from dsh.agent.runtime import resolve_route
    from dsh.config import load_settings

    with socket.socket() as taken:  # a port nothing listens on once it is closed
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
    url = f"http://alice:s3cret@127.0.0.1:{port}/v1?api_key=KEY1"
    overrides = {"provider": {"name": "openai-compatible", "base_url": url, "model": "m"}}
    settings = load_settings(overrides=overrides, environ={}, cwd=tmp_path)
    route = resolve_route(settings, environ={})
    assert route.notice is not None
    assert route.notice.startswith(f"http://127.0.0.1:{port}/v1?api_key=*** could not be reached (")
    assert route.base_url == url  # what is connected to keeps them


def test_an_answer_that_is_no_event_stream_names_the_base_url_without_its_secrets():
    from dsh.llm.errors import unfinished_stream

    error = unfinished_stream("finish reason", "text/html", CONFIGURED)
    _no_secret(str(error))
    assert "check that the base URL http://127.0.0.1:9/v1?api_key=*** is the API's" in str(error)


def test_the_events_view_shows_an_older_records_secrets_masked_as_it_records_them_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """An older dsh logged ``?api_key=`` and ``user:password@`` as given: ``--view events``
    printed them, though ``--view settings`` masked them. It now prints that record as this
    dsh records one — the same line but for the two URLs — and every other event as logged;
    the log itself is not rewritten."""
    from click.testing import CliRunner

    from dsh.agent.settings_record import as_recorded_today
    from dsh.cli.main import cli
    from dsh.events import SessionSettingsEvent, encode_event
    from dsh.store import JsonlStore
    from dsh.surface import Session
    from tests.helpers import append_chat_turn

    home = tmp_path / "home"
    monkeypatch.setenv("DSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    store = JsonlStore(home)
    session = Session(store.create(cwd=str(tmp_path)))
    snapshot = ss.snapshot(_config(), "openai-compatible", "m", 32_000, str(tmp_path))
    older = msgspec.structs.replace(
        snapshot,
        base_url="http://alice:s3cret@127.0.0.1:9/v1?api_key=KEY1&x=1",
        compaction=msgspec.structs.replace(
            snapshot.compaction, summarizer_base_url="http://127.0.0.1:9/v2?token=T0K2"
        ),
    )
    session.append(older)
    append_chat_turn(session, "hi", "hello")
    session.append(snapshot)  # as this dsh records: nothing to mask
    session.close()
    logged = (home / "sessions" / session.id / "session.jsonl").read_text()
    assert "KEY1" in logged  # what the older dsh wrote

    result = CliRunner().invoke(cli, ["sessions", "show", session.id, "--view", "events"])
    assert result.exit_code == 0, result.output
    _no_secret(result.stdout)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    events = Session.open(store, session.id).events
    assert len(lines) == len(events)
    first = lines[0]["data"]
    assert first["baseUrl"] == "http://127.0.0.1:9/v1?api_key=***&x=1"
    assert first["compaction"]["summarizerBaseUrl"] == "http://127.0.0.1:9/v2?token=***"
    # but for the two URLs, the line is the record as logged; every other event as logged
    first["baseUrl"] = older.base_url
    first["compaction"]["summarizerBaseUrl"] = older.compaction.summarizer_base_url
    assert lines == [json.loads(encode_event(event)) for event in events]
    assert (home / "sessions" / session.id / "session.jsonl").read_text() == logged
    clean = events[-1]
    assert isinstance(clean, SessionSettingsEvent)
    assert as_recorded_today(clean) is clean and as_recorded_today(events[1]) is events[1]
