"""``--summarizer-base-url`` next to the extractive summariser (the default) is refused by
``dsh run``, as ``dsh compact`` refuses it: the URL would be recorded and never used, so a user
who forgot ``--summarizer MODEL`` would believe a model summarises. Nothing is created or
logged. The real console script, as a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_compact_keyless_cli import dsh
from tests.helpers import run_session_id

URL = "http://127.0.0.1:1/v1"
REFUSAL = (
    "--summarizer-base-url is for a model summariser; {whose} is extractive, which calls no "
    "model: name the model with --summarizer MODEL"
)


def test_dsh_run_refuses_a_summariser_url_with_the_extractive_summariser(
    tmp_path: Path, env: dict[str, str]
) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "ok"}] * 3))
    sessions = Path(env["DSH_HOME"]) / "sessions"
    fresh = dsh("run", "--script", str(script), "--summarizer-base-url", URL, "hi",
                env=env, cwd=tmp_path)  # fmt: skip
    assert (fresh.returncode, fresh.stdout) == (2, "")
    assert fresh.stderr == "dsh: error: " + REFUSAL.format(whose="the configured one") + "\n"
    assert not sessions.exists() or not any(sessions.iterdir())  # no session created

    ran = dsh("run", "--script", str(script), "first", env=env, cwd=tmp_path)
    session_id = run_session_id(ran.stderr)
    log = sessions / session_id / "session.jsonl"
    before = log.read_bytes()
    resumed = dsh("run", "--session", session_id, "--script", str(script),
                  "--summarizer-base-url", URL, "again", env=env, cwd=tmp_path)  # fmt: skip
    assert (resumed.returncode, resumed.stdout) == (2, "")
    assert resumed.stderr == (
        "dsh: error: " + REFUSAL.format(whose=f"session {session_id}'s") + "\n"
    )
    assert log.read_bytes() == before  # nothing logged

    named = dsh("run", "--session", session_id, "--script", str(script), "--summarizer",
                "openai-compatible:qwen", "--summarizer-base-url", URL, "again",
                env=env, cwd=tmp_path)  # fmt: skip
    assert named.returncode == 0, named.stderr  # a model summariser takes the URL
