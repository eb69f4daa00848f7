"""``dsh web``'s sessions each run with their own workspace's settings
(``dsh.web.workspace_settings``): a workspace whose trusted config does not load is refused in
one line when the page opens or creates a session there, as ``dsh run`` refuses it, and the
session is still shown, with the approval mode dsh's default gives (never the server's own
directory's ``auto``)."""

from __future__ import annotations

from pathlib import Path

from dsh.agent.runtime import Route
from dsh.config.trust import set_trust
from dsh.surface import Session
from dsh.web import WebRuntime
from dsh.web.workspace_settings import WorkspaceSettings
from tests.web.conftest import make_env, open_client


def test_a_workspace_whose_trusted_config_does_not_load_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path, approval="auto")  # the server's own directory: approval auto
    home = {"DSH_HOME": str(tmp_path / "config-home")}
    y = tmp_path / "Y"
    (y / ".dsh").mkdir(parents=True)
    (y / ".dsh" / "config.toml").write_text('[tools]\napproval = "sometimes"\n')
    set_trust(y, True, environ=home)  # trusted as it is (`dsh trust` would refuse it)
    workspaces = WorkspaceSettings(environ=home, started=(env.workspace, env.settings))
    route = Route(env.provider(), "scripted", env.window)
    runtime = WebRuntime(env.settings, route, workspaces=workspaces)
    stored = Session.create(env.store, cwd=str(y))
    stored.close()
    with open_client(env, runtime) as client:
        for refused in (
            client.post(f"/api/sessions/{stored.id}/resume", json={}),
            client.post("/api/sessions", json={"cwd": str(y)}),
        ):
            assert refused.status_code == 503, refused.text
            message = refused.json()["error"]["message"]
            assert "config.toml" in message and "sometimes" in message
            assert "\n" not in message
        shown = client.get(f"/api/sessions/{stored.id}")
        assert shown.status_code == 200
        assert shown.json()["approval"]["mode"] == "ask"
        assert shown.json()["open"] is False
        here = client.post("/api/sessions", json={})  # the server's own workspace: its config
        assert here.status_code == 201
        assert here.json()["session"]["approval"]["mode"] == "auto"
