"""The ``DSH_<SECTION>_<KEY>`` environment variables as one configuration layer.

A value is a string, converted like a TOML value of the key's type (``msgspec``, not strict):
numbers and booleans as written; a list key (``tools.scrub_env``) takes a TOML array
(``["CORP_*", "VAULT_ADDR"]``) or comma-separated names (``CORP_*,VAULT_ADDR``); a table key
(``provider.overrides``) takes a TOML inline table.
"""

from __future__ import annotations

import logging
import tomllib
import typing
from collections.abc import Mapping
from typing import Any

import msgspec

from dsh.config.wording import closest, did_you_mean, suggested_keys
from dsh.errors import ConfigError

log = logging.getLogger("dsh.config")


def environment_layer(
    env: Mapping[str, str],
    sections: Mapping[str, type[msgspec.Struct]],
    *,
    skip: frozenset[str],
    refuse: frozenset[str],
) -> dict[str, dict[str, Any]]:
    """The ``DSH_SECTION_KEY`` variables of ``env`` as a layer (``skip``: ``DSH_*`` names that
    are not config keys). A ``DSH_*`` variable that names no config key is ignored with a
    warning naming it and the closest known variable (once per process), not a refusal: a typo
    or a variable of another dsh version must not stop every command. A section in ``refuse``
    (``[trust]``) is refused: it comes only from the user config."""
    layer: dict[str, dict[str, Any]] = {}
    for name, value in env.items():
        if not name.startswith("DSH_") or name in skip:
            continue
        rest = name[4:].lower()
        section = next((s for s in sections if rest.startswith(s + "_")), None)
        if section in refuse:  # a safety setting: refused, not ignored
            raise ConfigError(f"{name}: [{section}] may be set only in the user config file")
        key = rest[len(section) + 1 :] if section is not None else ""
        if section is None or key not in sections[section].__struct_fields__:
            settable = {n: fields for n, fields in sections.items() if n not in refuse}
            _warn_unknown_variable(name, section, suggested_variables(rest, section, settable))
            continue
        kind = typing.get_origin(typing.get_type_hints(sections[section])[key])
        layer.setdefault(section, {})[key] = _structured(name, value, kind)
    return layer


def _structured(name: str, value: str, kind: object) -> object:
    """A list or table key's value parsed from its text; any other key's text as it is."""
    if kind not in (list, dict):
        return value
    text = value.strip()
    if kind is list and not text.startswith("["):
        return [part.strip() for part in text.split(",") if part.strip()]
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError as exc:
        shape = "a TOML array or comma-separated names" if kind is list else "a TOML inline table"
        raise ConfigError(f"{name}: expected {shape} ({exc})") from exc


_warned_variables: set[str] = set()


def suggested_variables(
    rest: str, section: str | None, sections: Mapping[str, type[msgspec.Struct]]
) -> list[str]:
    """The variables ``DSH_<rest>`` most likely meant (``rest``: the name after ``DSH_``,
    lowercased; ``section``: the section it starts with, if any). After a section, its key
    closest to the rest, else the key as it is in another section, else the closest key of
    any (``suggested_keys``); without one, the sections holding ``rest`` as a key
    (``DSH_MODEL`` → ``DSH_PROVIDER_MODEL``), else the closest variable of all."""
    if section is not None:
        near = suggested_keys(rest[len(section) + 1 :], sections, section)
    else:
        near = [f"{s}.{rest}" for s, fields in sections.items() if rest in fields.__struct_fields__]
    if not near:
        every = {
            f"{s}_{key}": f"{s}.{key}" for s, f in sections.items() for key in f.__struct_fields__
        }
        found = closest(rest, every)
        near = [every[found]] if found else []
    return ["DSH_" + dotted.replace(".", "_").upper() for dotted in near]


def _warn_unknown_variable(name: str, section: str | None, suggested: list[str]) -> None:
    if name in _warned_variables:
        return
    _warned_variables.add(name)
    why = "no config section matches" if section is None else f"[{section}] has no such key"
    log.warning(
        "ignored environment variable %s: %s%s (see docs/config.md)",
        name,
        why,
        did_you_mean(suggested),
    )
