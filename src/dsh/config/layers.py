"""How a layer of the configuration is put over the ones below it (``merge_layer``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh.config.sections import SECTIONS
from dsh.config.wording import unknown_key, unknown_section
from dsh.errors import ConfigError


def merge_layer(
    into: dict[str, dict[str, Any]],
    layer: Mapping[str, Any],
    *,
    origin: str,
    origins: dict[str, str] | None = None,
) -> None:
    """Put ``layer`` (one config file's tables, or the environment's, or the flags') over
    ``into``, recording in ``origins`` where each key came from; an unknown section or key is
    refused by name (``ConfigError`` naming ``origin``), and so is a section that is not a
    table. MCP servers add up by name across layers."""
    for section, values in layer.items():
        fields = SECTIONS.get(section)
        if fields is None:
            raise ConfigError(unknown_section(section, values, SECTIONS, origin))
        if not isinstance(values, Mapping):
            raise ConfigError(f"config [{section}] in {origin} must be a table")
        known = set(fields.__struct_fields__)
        for key, value in values.items():
            if key not in known:
                raise ConfigError(unknown_key(section, key, SECTIONS, origin))
            if (section, key) == ("mcp", "servers") and isinstance(value, Mapping):
                # servers add up by name across layers (a later one of the same name replaces it)
                if origins is not None:
                    origins.update({f"mcp.servers.{name}": origin for name in value})
                below = into.get(section, {}).get(key)
                value = {**below, **value} if isinstance(below, Mapping) else value
            into.setdefault(section, {})[key] = value
            if origins is not None:
                origins[f"{section}.{key}"] = origin
