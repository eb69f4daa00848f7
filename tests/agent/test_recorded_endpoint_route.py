"""A reopened session runs at the endpoint it recorded: the route a face built for its own
configured endpoint is rebuilt when the session's recorded base URL differs, even when the
provider and model are the same (``SettingsWiring.own``)."""

from __future__ import annotations

from pathlib import Path

from dsh.agent.runtime import Route
from dsh.agent.session_runner import SettingsWiring, record_settings
from dsh.config import ProviderSettings, Settings
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.store import MemoryStore
from dsh.surface import Session


def settings_at(url: str) -> Settings:
    return Settings(provider=ProviderSettings(name="openai-compatible", model="m", base_url=url))


def test_a_session_recorded_at_another_endpoint_is_rerouted_there(tmp_path: Path) -> None:
    provider = ScriptedProvider(parse_script([]), model="m")
    provider.name = "openai-compatible"
    face_route = Route(provider, "m", 8192)
    session = Session.create(MemoryStore(), cwd=tmp_path)
    record_settings(session, settings_at("http://127.0.0.1:9001/v1"), face_route)
    asked: list[str | None] = []

    def reroute(settings: Settings) -> Route:
        asked.append(settings.provider.base_url)
        return Route(provider, "m", 4096)

    wiring = SettingsWiring(
        settings_at("http://127.0.0.1:9002/v1"), lambda: face_route, reroute=reroute
    )
    settings, route = wiring.own(session)
    assert settings.provider.base_url == "http://127.0.0.1:9001/v1"
    assert asked == ["http://127.0.0.1:9001/v1"] and route is not face_route
    same = SettingsWiring(
        settings_at("http://127.0.0.1:9001/v1"), lambda: face_route, reroute=reroute
    )
    assert same.own(session)[1] is face_route  # the face's own endpoint: nothing to rebuild
