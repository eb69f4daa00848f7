"""What ``dsh compact``'s summariser flags leave recorded: only what takes effect, and only once
its pass has landed. A URL given to a summariser that calls no model is refused; a pass that
fails, or that ``kill -9`` stops, leaves the session's settings as they were, so a later plain
``dsh compact`` does not take the summariser that never wrote a summary; a backend switch is
recorded as its pass starts (its summariser as before). The real console script, as a
subprocess; the summariser is a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

from dsh.events import SessionSettings, SessionSettingsEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.conftest import DSH
from tests.cli.test_compact_keyless_cli import PROXIES, dsh, scripted_session
from tests.llm.fake_server import Canned, FakeServer

REFUSED_URL = "http://127.0.0.1:1/v1"  # nothing listens there: the summary call fails


def recorded(env: dict[str, str], session_id: str) -> list[SessionSettings]:
    events = Session.open(JsonlStore(Path(env["DSH_HOME"])), session_id).events
    return [e.data for e in events if isinstance(e, SessionSettingsEvent)]


def direct(env: dict[str, str]) -> dict[str, str]:
    """``env`` without proxies: the summariser is on 127.0.0.1."""
    return {k: v for k, v in env.items() if k.lower() not in PROXIES}


def test_a_summariser_url_beside_an_extractive_summariser_is_refused(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The URL was recorded next to ``summarizer extractive``, which never uses it."""
    session_id = scripted_session(tmp_path, env)  # its summariser: extractive (the default)
    log = Path(env["DSH_HOME"]) / "sessions" / session_id / "session.jsonl"
    before = log.read_bytes()
    for flags in (
        ("--summarizer-base-url", REFUSED_URL),
        ("--summarizer", "extractive", "--summarizer-base-url", REFUSED_URL),
    ):
        refused = dsh("compact", session_id, *flags, env=env, cwd=tmp_path)

        assert (refused.returncode, refused.stdout) == (2, ""), flags
        assert refused.stderr == (
            f"dsh: error: --summarizer-base-url is for a model summariser; session {session_id}'s "
            "is extractive, which calls no model: name the model with --summarizer MODEL\n"
        )
        assert log.read_bytes() == before  # nothing logged


def test_a_pass_that_fails_leaves_the_recorded_summariser_as_it_was(
    tmp_path: Path, env: dict[str, str]
) -> None:
    session_id = scripted_session(tmp_path, env)
    before = recorded(env, session_id)

    failed = dsh("compact", session_id, "--summarizer", "openai-compatible:m",
                 "--summarizer-base-url", REFUSED_URL, env=direct(env), cwd=tmp_path)  # fmt: skip

    assert failed.returncode == 1 and failed.stdout.startswith("Compaction failed"), failed
    assert "the flags change its recorded settings" not in failed.stderr
    assert recorded(env, session_id) == before
    plain = dsh("compact", session_id, env=env, cwd=tmp_path)  # extractive, as recorded
    assert plain.returncode == 0 and plain.stdout.startswith("Compacted "), plain


def test_a_pass_killed_mid_summary_leaves_the_recorded_summariser_as_it_was(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """``kill -9`` while the new summariser's call is under way: nothing of it is recorded."""
    session_id = scripted_session(tmp_path, env)
    before = recorded(env, session_id)
    never = threading.Event()
    with FakeServer() as server:
        server.fixed["/v1/chat/completions"] = Canned(
            200, {"Content-Type": "text/event-stream"}, (b"data: [DONE]\n\n",), hold=never
        )
        url = f"{server.url}/v1"
        child = subprocess.Popen(
            [DSH, "compact", session_id, "--summarizer", "openai-compatible:m",
             "--summarizer-base-url", url],
            env=direct(env), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not [r for r in server.fixed_requests if r.method == "POST"]:
                assert child.poll() is None, "dsh compact ended before its summary call"
                assert time.monotonic() < deadline, "the summary was never asked for"
                time.sleep(0.05)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=60)
        finally:
            never.set()
            if child.poll() is None:
                child.kill()
                child.wait()

    assert recorded(env, session_id) == before
    plain = dsh("compact", session_id, env=env, cwd=tmp_path)  # extractive, as recorded
    assert plain.returncode == 0 and "Compacted " in plain.stdout, plain


def test_a_backend_switch_is_recorded_as_its_pass_starts_and_the_summariser_once_it_lands(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A pass a killed process leaves half committed is finished with the recorded backend, so
    a switch is recorded before the pass commits anything; the summariser given beside it is
    not, when the pass fails."""
    session_id = scripted_session(tmp_path, env)
    (first,) = recorded(env, session_id)
    assert (first.compaction.backend, first.compaction.summarizer) == ("recallable", "extractive")

    failed = dsh("compact", session_id, "--backend", "basic", "--summarizer", "openai-compatible:m",
                 "--summarizer-base-url", REFUSED_URL, env=direct(env), cwd=tmp_path)  # fmt: skip

    assert failed.returncode == 1, failed
    assert (
        f"dsh: warning: session {session_id}: the flags change its recorded settings: "
        "compaction.backend recallable -> basic\n"
    ) in failed.stderr
    (_, switched) = recorded(env, session_id)
    assert switched.changed == ("compaction.backend",)
    assert switched.compaction.summarizer == "extractive"
    assert switched.compaction.summarizer_base_url is None
