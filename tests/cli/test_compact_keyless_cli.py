"""``dsh compact --summarizer MODEL`` on a session that ran on the keyless scripted provider:
that provider answers only from a script, which ``dsh compact`` does not take, so the model
cannot run there. The error says what ``dsh compact`` can do instead (not "needs --script
FILE", an option it has not), and each thing it names works. The real console script, as a
subprocess; the other provider is a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from dsh.compaction.prompts import join_pass_answer
from dsh.events import SessionSettingsEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.conftest import DSH
from tests.helpers import run_session_id
from tests.llm.fake_server import Canned, FakeServer, Recorded, openai_text

PROXIES = {"http_proxy", "https_proxy", "all_proxy"}
STATE = "## Goal\n- go on\n## Decisions\n- none\n## Current state\n- ok\n## Constraints\n"
STATE += "- none\n## Next steps\n- continue"


class Summariser(FakeServer):
    """A summariser model: answers a compaction pass's call with a section per label it asks for."""

    def _next(self, recorded: Recorded) -> Canned:
        with self._lock:
            self.requests.append(recorded)
        last = json.dumps(recorded.body["messages"][-1]["content"])
        labels = re.findall(r"=== (stub \d+|state) ===", last)
        sections = [(label, STATE if label == "state" else "Answered.") for label in labels]
        return openai_text(join_pass_answer(sections) if sections else STATE)


def dsh(*args: str, env, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def scripted_session(tmp_path: Path, env: dict[str, str]) -> str:
    """A session on the scripted provider with enough history to compact (in a small window)."""
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": f"answer {i} " + "y" * 1500} for i in range(4)]))
    ran = dsh("run", "--context-window", "8000", "--script", str(script), "first",
              env=env, cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    session_id = run_session_id(ran.stderr)
    for i in range(3):
        more = dsh("run", "--session", session_id, "--script", str(script), f"q{i} " + "z" * 1500,
                   env=env, cwd=tmp_path)  # fmt: skip
        assert more.returncode == 0, more.stderr
    return session_id


def test_a_model_summariser_on_a_scripted_session_names_what_dsh_compact_can_do(
    tmp_path: Path, env: dict[str, str]
) -> None:
    session_id = scripted_session(tmp_path, env)
    log = Path(env["DSH_HOME"]) / "sessions" / session_id / "session.jsonl"
    before = log.read_bytes()

    refused = dsh(
        "compact", session_id, "--summarizer", "qwen2.5-coder:0.5b", env=env, cwd=tmp_path
    )

    assert refused.returncode == 2 and refused.stdout == ""
    (error,) = [line for line in refused.stderr.splitlines() if line.startswith("dsh: error: ")]
    assert error == (
        f"dsh: error: session {session_id} runs on the scripted provider, which dsh compact "
        "cannot call (it takes no --script): compact with --summarizer extractive (no model) or "
        "another provider's model (--summarizer PROVIDER:MODEL: deepseek, openai, anthropic; "
        "openai-compatible with --summarizer-base-url)"
    )  # openai-compatible needs a base URL, which the session has not
    assert log.read_bytes() == before  # nothing was logged for it


def test_what_the_error_names_compacts_the_scripted_session(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """--summarizer extractive, and a model on another provider: here ``openai``, reached at the
    summariser endpoint the session was started with (a local server stands in for it)."""
    extractive_one = scripted_session(tmp_path, env)
    with Summariser() as server:
        env["DSH_COMPACTION_SUMMARIZER_BASE_URL"] = f"{server.url}/v1"  # recorded by the session
        model_one = scripted_session(tmp_path, env)
        extractive = dsh("compact", extractive_one, "--summarizer", "extractive",
                         env=env, cwd=tmp_path)  # fmt: skip
        direct = {k: v for k, v in env.items() if k.lower() not in PROXIES}  # to 127.0.0.1
        model = dsh("compact", model_one, "--summarizer", "openai:summary-model",
                    env={**direct, "OPENAI_API_KEY": "sk-test"}, cwd=tmp_path)  # fmt: skip

    assert extractive.returncode == 0 and extractive.stdout.startswith("Compacted "), extractive
    assert model.returncode == 0 and model.stdout.startswith("Compacted "), model
    assert server.requests and all(r.body["model"] == "summary-model" for r in server.requests)


def test_summarizer_base_url_sends_the_summary_calls_to_that_server(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The other thing the error names: ``--summarizer openai-compatible:MODEL`` with
    ``--summarizer-base-url`` on a session that recorded no summariser endpoint; a local server
    stands in for the user's own (Ollama, vLLM), keyless."""
    session_id = scripted_session(tmp_path, env)
    direct = {k: v for k, v in env.items() if k.lower() not in PROXIES}  # to 127.0.0.1
    with Summariser() as server:
        url = f"{server.url}/v1"
        model = dsh("compact", session_id, "--summarizer", "openai-compatible:summary-model",
                    "--summarizer-base-url", url, env=direct, cwd=tmp_path)  # fmt: skip

    assert model.returncode == 0 and model.stdout.startswith("Compacted "), model
    calls = [r for r in server.requests if r.method == "POST"]
    assert calls and all(r.path == "/v1/chat/completions" for r in calls)
    assert all(r.body["model"] == "summary-model" for r in calls)
    assert f"compaction.summarizer_base_url (none) -> {url}" in model.stderr
    events = Session.open(JsonlStore(Path(env["DSH_HOME"])), session_id).events
    recorded = [e.data for e in events if isinstance(e, SessionSettingsEvent)][-1]
    assert recorded.compaction.summarizer_base_url == url  # the session's from now on
