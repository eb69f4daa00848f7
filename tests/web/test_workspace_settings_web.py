"""``dsh web`` runs each session with its own workspace's settings, as ``dsh run --session`` in
that workspace would: the user's config, then that workspace's ``.dsh/config.toml`` only if it
is trusted, the route flags over them. The trusted project config of the directory the server
started in (``tools.approval = "auto"``, its MCP servers) no longer reaches a session the page
resumes or creates in another, untrusted workspace (a cloned repository): its tools are asked.

Real processes: the ``dsh`` console script's ``dsh web`` (its own ``_serve`` wiring), started in
one directory, driven over HTTP; the sessions' tools run for real (a ``bash`` call that touches
a file)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from dsh.config.trust import set_trust
from tests.helpers import run_session_id
from tests.mcp.conftest import started_pids, toml_server
from tests.web.real_command import URL_LINE, DshWeb

DSH = str(Path(sys.executable).with_name("dsh"))
MARK = "RAN_UNASKED"


def home_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    for key in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)
    env["DSH_HOME"] = str(home)
    return env


def touch_script(tmp_path: Path) -> Path:
    """Each prompt: a ``bash`` call that touches ``MARK``, then a reply (a script's entry n
    answers a session's model call n: a session's second prompt gets the second pair)."""
    path = tmp_path / "touch.json"
    call = {"name": "bash", "arguments": {"command": f"touch {MARK}"}}
    path.write_text(json.dumps([{"toolCalls": [call]}, {"text": "done"}] * 2))
    return path


def project(directory: Path, config: str, home: Path, *, trusted: bool) -> Path:
    (directory / ".dsh").mkdir(parents=True)
    (directory / ".dsh" / "config.toml").write_text(config)
    if trusted:
        set_trust(directory, True, environ={"DSH_HOME": str(home)})
    return directory


@contextlib.contextmanager
def web_in(directory: Path, home: Path, script: Path) -> Iterator[DshWeb]:
    """``dsh web --port 0 --no-open --script SCRIPT`` started in ``directory``; Ctrl-C at the
    end, which must exit 0."""
    process = subprocess.Popen(
        [DSH, "web", "--port", "0", "--no-open", "--script", str(script)],
        cwd=directory,
        env=home_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = URL_LINE.search(line)
        assert match, line
        base, port, token = match.groups()
        yield DshWeb(base, int(port), token)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr


def client(web: DshWeb) -> httpx.Client:
    auth = {"Authorization": f"Bearer {web.token}"}
    return httpx.Client(base_url=web.base, headers=auth, timeout=60)


def info_when(http: httpx.Client, session_id: str, ready: Any) -> dict[str, Any]:
    """The session's info once ``ready(info)`` holds (no deadline raced: a generous cap)."""
    give_up = time.monotonic() + 120
    while True:
        info: dict[str, Any] = http.get(f"/api/sessions/{session_id}").json()
        if ready(info):
            return info
        assert time.monotonic() < give_up, info
        time.sleep(0.05)


def prompt(http: httpx.Client, session_id: str) -> None:
    started = http.post(f"/api/sessions/{session_id}/prompt", json={"text": "go"})
    assert started.status_code == 202, started.text


def asked_then_denied(http: httpx.Client, session_id: str) -> dict[str, Any]:
    """Prompt the session; its bash call must be asked (not run): deny it, wait for the end."""
    prompt(http, session_id)
    info = info_when(http, session_id, lambda i: i["approvals"] or i["running"] is None)
    assert [a["tool"] for a in info["approvals"]] == ["bash"], info
    answer = f"/api/sessions/{session_id}/approvals/{info['approvals'][0]['id']}"
    assert http.post(answer, json={"answer": "deny"}).status_code == 200
    return info_when(http, session_id, lambda i: i["running"] is None)


def run_unasked(http: httpx.Client, session_id: str) -> dict[str, Any]:
    prompt(http, session_id)
    info = info_when(http, session_id, lambda i: i["approvals"] or i["running"] is None)
    assert info["approvals"] == [], info  # nobody was asked
    return info


def created(http: httpx.Client, cwd: Path | None = None) -> dict[str, Any]:
    made = http.post("/api/sessions", json={} if cwd is None else {"cwd": str(cwd)})
    assert made.status_code == 201, made.text
    session: dict[str, Any] = made.json()["session"]
    return session


def test_a_session_in_an_untrusted_workspace_is_asked_though_the_server_s_own_is_trusted_auto(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    x = project(tmp_path / "X", '[tools]\napproval = "auto"\n', home, trusted=True)
    y = tmp_path / "Y"
    y.mkdir()
    script = touch_script(tmp_path)
    ran = subprocess.run(  # a session of Y's, whose bash call `dsh run` there did not run
        [DSH, "run", "--script", str(script), "go"],
        cwd=y,
        env=home_env(home),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "denied by approval policy 'ask'" in ran.stdout + ran.stderr
    older = run_session_id(ran.stderr)
    with web_in(x, home, script) as web, client(web) as http:
        resumed = http.post(f"/api/sessions/{older}/resume", json={})
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["session"]["cwd"] == str(y.resolve())
        assert resumed.json()["session"]["approval"]["mode"] == "ask"
        asked_then_denied(http, older)
        assert not (y / MARK).exists()

        new_in_y = created(http, y)
        assert new_in_y["approval"]["mode"] == "ask"
        assert http.get(f"/api/sessions/{new_in_y['id']}/approval").json()["mode"] == "ask"
        asked_then_denied(http, new_in_y["id"])
        assert not (y / MARK).exists()

        new_in_x = created(http)  # the server's own workspace keeps its trusted config
        assert new_in_x["cwd"] == str(x.resolve())
        assert new_in_x["approval"]["mode"] == "auto"
        run_unasked(http, new_in_x["id"])
        info_when(http, new_in_x["id"], lambda i: i["running"] is None)
        assert (x / MARK).exists()


def test_a_trusted_workspace_s_own_settings_apply_to_its_sessions_not_the_server_s(
    tmp_path: Path,
) -> None:
    """Its approval mode, and its model: a new session there runs on the route its config
    gives (the server's flags still over it: ``--script`` answers)."""
    home = tmp_path / "home"
    x = tmp_path / "X"
    x.mkdir()
    own = '[tools]\napproval = "auto"\n[provider]\nmodel = "y-model"\n'
    y = project(tmp_path / "Y", own, home, trusted=True)
    script = touch_script(tmp_path)
    with web_in(x, home, script) as web, client(web) as http:
        new_in_x = created(http)
        assert new_in_x["approval"]["mode"] == "ask"
        assert http.get(f"/api/sessions/{new_in_x['id']}/model").json()["model"] == "scripted"

        new_in_y = created(http, y)
        assert new_in_y["approval"]["mode"] == "auto"
        assert http.get(f"/api/sessions/{new_in_y['id']}/model").json()["model"] == "y-model"
        run_unasked(http, new_in_y["id"])
        info_when(http, new_in_y["id"], lambda i: i["running"] is None)
        assert (y / MARK).exists()

        asked_then_denied(http, new_in_x["id"])
        assert not (x / MARK).exists()


def test_the_trusted_mcp_servers_of_the_server_s_directory_do_not_start_for_another_workspace(
    tmp_path: Path,
) -> None:
    """X's servers start once, in X, as the server starts; a session in the untrusted Y runs
    without them (no server is started with Y as its working directory)."""
    home = tmp_path / "home"
    starts = tmp_path / "starts"
    probe = toml_server("probe", env={"MCP_TEST_STARTS_FILE": str(starts)})
    x = project(tmp_path / "X", probe, home, trusted=True)
    y = tmp_path / "Y"
    y.mkdir()
    with web_in(x, home, touch_script(tmp_path)) as web, client(web) as http:
        assert len(started_pids(starts)) == 1  # X's, started before the URL line
        new_in_y = created(http, y)
        asked_then_denied(http, new_in_y["id"])  # its servers were started before its turn ran
        assert len(started_pids(starts)) == 1
