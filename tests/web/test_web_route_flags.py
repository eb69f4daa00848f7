"""``dsh web`` takes every route flag ``dsh run`` takes (``dsh.cli.options``), and each reaches a
session started from the page as the same key in ``config.toml`` would: its recorded settings
are those of a ``dsh run`` session configured with the keys. ``--replay`` serves a recorded
session's answers (a unique prefix of its id names it), starting from its recorded settings.

Real processes: ``dsh web`` and ``dsh run``. The flag sets of the three faces are compared in
``tests/cli/test_route_flags.py``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx

from tests.cli.route_flag_values import CONFIG, FLAGS, has_the_flag_values
from tests.helpers import run_session_id
from tests.web.real_command import DSH, DshWeb, dsh_web_process
from tests.web.test_web_provider_flags import answers, events_of, prompt_and_wait, recorded_settings


def run(home: Path, cwd: Path, *args: str) -> str:
    """``dsh run ARGS`` in ``cwd`` with ``home``; the session id it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(home)
    done = subprocess.run(
        [DSH, "run", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return run_session_id(done.stderr)


def session_from_the_page(web: DshWeb, cwd: Path, prompt: str) -> str:
    """A new session made as the page makes it, in ``cwd``, once ``prompt``'s turn ended."""
    auth = {"Authorization": f"Bearer {web.token}"}
    with httpx.Client(base_url=web.base, headers=auth, timeout=60) as http:
        made = http.post("/api/sessions", json={"cwd": str(cwd)})
        assert made.status_code == 201, made.text
        session_id: str = made.json()["session"]["id"]
    prompt_and_wait(web, session_id, prompt)
    return session_id


def write_script(tmp_path: Path) -> Path:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "first answer"}]))
    return script


def test_web_route_flags_reach_a_session_as_their_config_keys_would(tmp_path: Path) -> None:
    script = write_script(tmp_path)
    config_home = tmp_path / "config"
    config_home.mkdir()
    (config_home / "config.toml").write_text(CONFIG)
    by_config = run(config_home, tmp_path, "--script", str(script), "hi")
    with dsh_web_process(tmp_path, ("--script", str(script), *FLAGS)) as web:
        session_id = session_from_the_page(web, tmp_path, "hi")
    events = events_of(tmp_path / "home", session_id)
    assert answers(events) == ["first answer"]
    [recorded] = recorded_settings(events)
    assert [recorded] == recorded_settings(events_of(config_home, by_config))
    assert has_the_flag_values(recorded)


def test_web_replay_serves_a_recorded_session_from_its_recorded_settings(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = write_script(tmp_path)
    recording = run(home, tmp_path, "--script", str(script), "--context-window", "30000", "hi")
    flags = ("--replay", recording[:-3], "--compaction", "basic")
    with dsh_web_process(tmp_path, flags) as web:
        session_id = session_from_the_page(web, tmp_path, "hi again")
    assert session_id != recording
    events = events_of(home, session_id)
    assert answers(events) == ["first answer"]  # the recording's, served again
    [recorded] = recorded_settings(events)
    settings: dict[str, Any] = recorded
    assert (settings["provider"], settings["contextWindow"]) == ("replay", 30_000)
    assert settings["compaction"]["backend"] == "basic"
