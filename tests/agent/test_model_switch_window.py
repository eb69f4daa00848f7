"""``dsh.agent.model_command.switched``: the window ``/model NAME`` moves a session in, the rule
both faces take (a window the session set stays, as on a reopen's ``--model``; one its server
gave is the new model's), and the line that says it."""

from __future__ import annotations

from dsh.agent import session_settings as ss
from dsh.agent.model_command import switched, switched_note
from dsh.agent.runtime import Route
from dsh.config import ProviderSettings, Settings
from dsh.llm.scripted import ScriptedProvider

CONFIGURED = ProviderSettings(name="openai-compatible", base_url="http://127.0.0.1:9/v1")


def new_model(window: int, window_from: str = "server") -> Route:
    """``m2`` resolved on the configured settings: in ``window`` tokens from ``window_from``."""
    provider = ScriptedProvider([], model="m2")
    return Route(provider, "m2", window, window_from=window_from)  # type: ignore[arg-type]


def own_of(window: int, *, asked: bool) -> ProviderSettings:
    """The settings a session recorded in ``window`` reopens with (``asked``: its server's)."""
    configured = Settings(provider=CONFIGURED)
    recorded = ss.snapshot(configured, "openai-compatible", "m", window, "/w", window_asked=asked)
    return ss.effective(configured, recorded).settings.provider


def test_a_window_the_session_recorded_as_set_stays_and_is_said_to():
    route, said = switched(new_model(32768), own_of(8000, asked=False), CONFIGURED, 8000)
    assert (route.model, route.context_window, route.window_from) == ("m2", 8000, "settings")
    assert said == (
        "Model for the next turns: m2. Its context window stays 8,000 tokens (set for this "
        "session)."
    )


def test_a_window_its_server_gave_is_the_new_models():
    route, said = switched(new_model(32768), own_of(8192, asked=True), CONFIGURED, 8192)
    assert (route.context_window, route.window_from) == (32768, "server")
    assert said == "Model for the next turns: m2. Context window: 32,768 tokens (was 8,192)."


def test_a_window_the_flags_or_the_config_set_stays_and_is_said_to():
    flags = ProviderSettings(name="openai-compatible", context_window=16000)
    route, said = switched(new_model(16000, "settings"), flags, flags, 16000)
    assert route.context_window == 16000
    assert said.endswith("Its context window stays 16,000 tokens (set for this session).")


def test_a_recorded_window_the_new_model_has_anyway_is_not_said_to_stay():
    """A keyless provider's default (recorded as not asked): the new model runs in it too,
    and nobody set it: the line gives the window, not a claim that it was set."""
    route, said = switched(
        new_model(128000, "settings"), own_of(128000, asked=False), CONFIGURED, 128000
    )
    assert route.context_window == 128000
    assert said == "Model for the next turns: m2. Context window: 128,000 tokens."


def test_the_line_without_a_window_is_the_model_alone():
    assert switched_note("m2") == "Model for the next turns: m2."
