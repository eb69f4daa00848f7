"""The provider of a first run that chose none: the one whose key is set.

Someone coming from another agent has ``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY`` set, not
dsh's default ``DEEPSEEK_API_KEY``. When nothing names the route (no ``provider.name``,
``base_url``, ``model``, ``api_key`` or ``api_key_env`` in a config file or a ``DSH_PROVIDER_*``
variable, no route flag), the default provider's key is unset and exactly one other provider's
key is set, a new session runs on that provider (``load_settings(choose_provider=True)``), said
in one warning naming the key found and how to choose for good. With several set, none is
taken: the missing key's error names them with ``--provider`` (``dsh.agent.runtime``). What
names a route wins, whatever keys are set; a resumed session keeps its recorded route.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULT_PROVIDER = "deepseek"
"""``provider.name`` when nothing sets it (``ProviderSettings.name``)."""

KEY_VARIABLES = {
    "deepseek": "DEEPSEEK_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
}
"""The providers a key alone chooses, each with the variable holding its key (the registry's
``key_env``: a test holds them alike)."""

ROUTE_KEYS = ("name", "base_url", "model", "api_key", "api_key_env")
"""The ``[provider]`` keys that name a route: any one of them set, no key chooses it."""


def provider_from_keys(
    provider: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[str, str] | None:
    """The provider to use and the line saying why, for the merged ``[provider]`` layer
    ``provider`` (None: the route is named, the default's key is set, or not exactly one other
    provider's key is)."""
    if any(key in provider for key in ROUTE_KEYS) or environ.get(KEY_VARIABLES[DEFAULT_PROVIDER]):
        return None
    found = [name for name, variable in KEY_VARIABLES.items() if environ.get(variable)]
    if len(found) != 1:
        return None
    name = found[0]
    return name, (
        f"no provider chosen and {KEY_VARIABLES[DEFAULT_PROVIDER]} is not set: using {name}, as "
        f"{KEY_VARIABLES[name]} is set (to choose, pass --provider or set provider.name in "
        "$DSH_HOME/config.toml)"
    )
