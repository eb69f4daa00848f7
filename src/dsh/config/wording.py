"""How a configuration mistake is said: the known name a misspelt or misplaced one most likely
meant, and the choices of a setting that takes one of a few words.

- A key or section no section knows is refused by name with the closest known name, when one
  is close enough (``difflib``, ratio at least ``CUTOFF``): ``temprature`` → ``temperature``,
  ``[providers]`` → ``[provider]``. A key written outside any section, or in the wrong one, that
  some section holds as it is (``model = "qwen"`` at the top of the file) is sent there:
  ``belongs in a section (did you mean provider.model?)``.
- A value of a setting that takes one of a few words (a ``Literal``: ``tools.approval``) is
  refused listing them all: ``must be one of ask, auto, read-only; got 'yes'``.
- Any other conversion error keeps msgspec's words after the key it names.

Every message is one line naming the key; the caller adds where it was set.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Union

import msgspec

from dsh.errors import ConfigError

CUTOFF = 0.6
"""How alike a known name must be to a misspelt one to be offered (``difflib``'s ratio)."""
_UNKNOWN_FIELD = re.compile(r"Object contains unknown field `(?P<name>[^`]*)`")
_BAD_ENUM = re.compile(r"Invalid enum value (?P<value>.+)")
_WRONG_TYPE = re.compile(r"Expected `[^`]+`, got `(?P<got>[^`]+)`")

Sections = Mapping[str, type[msgspec.Struct]]


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like ``name``, if one is close enough."""
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=CUTOFF)
    return found[0] if found else None


def suggested_keys(key: str, sections: Sections, section: str | None = None) -> list[str]:
    """The ``section.key`` names a misspelt or misplaced ``key`` most likely meant: in
    ``section`` (when it is one), its closest key; else every section holding ``key`` as it
    is; else the closest key of any section. Empty when nothing is close."""
    if section is not None and section in sections:
        near = closest(key, sections[section].__struct_fields__)
        if near is not None:
            return [f"{section}.{near}"]
    holders = [name for name, fields in sections.items() if key in fields.__struct_fields__]
    if holders:
        return [f"{name}.{key}" for name in holders if name != section]
    every = {
        f"{name}.{field}": field for name, s in sections.items() for field in s.__struct_fields__
    }
    near = closest(key, set(every.values()))
    return [dotted for dotted, field in every.items() if field == near]


def did_you_mean(names: list[str]) -> str:
    """`` (did you mean a or b?)`` for ``names``, empty for none."""
    if not names:
        return ""
    shown = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f" (did you mean {shown}?)"


def unknown_section(name: str, value: object, sections: Sections, origin: str) -> str:
    """The error of a top-level ``name`` no section is called: a table is offered the closest
    section; a plain value is a key outside any section, sent to the section that holds it."""
    if isinstance(value, Mapping):
        near = closest(name, sections)
        hint = did_you_mean([f"[{near}]"] if near else [])
        return f"unknown config section [{name}] in {origin}{hint}"
    suggested = suggested_keys(name, sections)
    if suggested:
        return f"config key {name} in {origin} belongs in a section{did_you_mean(suggested)}"
    listed = ", ".join(f"[{section}]" for section in sections)
    return f"unknown config key {name} in {origin}: keys belong in a section ({listed})"


def unknown_key(section: str, key: str, sections: Sections, origin: str) -> str:
    """The error of a ``key`` its ``section`` does not have."""
    hint = did_you_mean(suggested_keys(key, sections, section))
    return f"unknown config key {section}.{key} in {origin}{hint}"


def check_named_tables(tables: object, kind: type[Any], key_of: Callable[[str], str]) -> None:
    """Convert each table of the mapping ``tables`` (name -> table) to ``kind`` on its own, so a
    type error names that table's key, ``key_of(name)``, rather than a place in one big
    conversion; anything but a mapping is left to the whole conversion to report."""
    if not isinstance(tables, Mapping):
        return
    for name, table in tables.items():
        try:
            msgspec.convert(table, kind, strict=False)
        except msgspec.ValidationError as exc:
            raise ConfigError(describe(exc, kind, key_of(name))) from exc


def describe(exc: msgspec.ValidationError, root_type: type[Any], root: str = "") -> str:
    """The conversion error ``exc`` as one line naming its key; ``root`` is the key of the
    value converted to ``root_type`` (empty: the whole configuration)."""
    text = str(exc)
    message, _, where = text.partition(" - at `$")
    key = ".".join(part for part in (root, where.rstrip("`").lstrip(".")) if part)
    if not key:
        return f"invalid configuration: {text}"
    target = _type_at(root_type, where.rstrip("`"))
    unknown = _UNKNOWN_FIELD.fullmatch(message)
    if unknown is not None:
        field = unknown["name"]
        fields = _struct_fields(target)
        near = closest(field, fields) if fields else None
        hint = did_you_mean([f"{key}.{near}"] if near else [])
        return f"unknown config key {key}.{field}{hint}"
    choices = _choices(_type_at(root_type, where.rstrip("`")))
    if choices:
        bad, wrong = _BAD_ENUM.fullmatch(message), _WRONG_TYPE.fullmatch(message)
        got = bad["value"] if bad else f"a value of type {wrong['got']}" if wrong else None
        if got is not None:
            return f"config key {key} must be one of {', '.join(choices)}; got {got}"
    return f"invalid configuration: config key {key}: {message}"


def _type_at(root: Any, path: str) -> Any:
    """The type of the value at msgspec's error ``path`` (``.tools.approval``,
    ``.provider.overrides[...].tool_choice``) inside ``root``; None when it cannot tell."""
    current: Any = root
    for part in re.findall(r"\.([A-Za-z0-9_]+)|\[([^\]]*)\]", path):
        name = part[0]
        current = _unwrap(current)
        if name and isinstance(current, type) and issubclass(current, msgspec.Struct):
            current = typing.get_type_hints(current).get(name)
        elif typing.get_origin(current) in (dict, list):  # a table's entry, a list's item
            current = typing.get_args(current)[-1]
        else:
            return None
    return current


def _unwrap(kind: Any) -> Any:
    """``kind`` without ``| None``."""
    if typing.get_origin(kind) in (Union, types.UnionType):
        rest = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        return rest[0] if len(rest) == 1 else kind
    return kind


def _struct_fields(kind: Any) -> tuple[str, ...]:
    kind = _unwrap(kind)
    if typing.get_origin(kind) is dict:  # ``mcp.servers.docs`` names the table's entry
        kind = _unwrap(typing.get_args(kind)[-1])
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return kind.__struct_fields__
    return ()


def _choices(kind: Any) -> tuple[str, ...]:
    """The words a ``Literal`` setting takes (``| None`` allowed), else nothing."""
    kind = _unwrap(kind)
    if typing.get_origin(kind) is Literal:
        return tuple(str(arg) for arg in typing.get_args(kind))
    return ()
