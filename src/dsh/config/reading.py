"""Where dsh's own files are (``$DSH_HOME``) and how a config file is read: its bytes, then
TOML, each failure one line naming the file.

A project config is read once, as bytes: its trust is checked against the digest of those bytes
and its settings come from the same bytes (:mod:`dsh.config.trust`), so a file changed between
the two cannot be trusted for content nobody checked. Either config is read as a small file
(:mod:`dsh.config.small_file`): a FIFO or a symlink to ``/dev/zero`` in its place, or a file
over ``CONFIG_LIMIT``, cannot be read, and is said so rather than hanging dsh.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs

from dsh.config.small_file import MIB, UnreadableFile, read_small_file
from dsh.errors import ConfigError

CONFIG_LIMIT = MIB
"""A config file longer than this is not read (no config is near it)."""


def dsh_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$DSH_HOME`` if set, else the platform's user data directory for dsh."""
    env = os.environ if environ is None else environ
    value = env.get("DSH_HOME")
    home = Path(value).expanduser() if value else Path(platformdirs.user_data_dir("dsh"))
    if home.exists() and not home.is_dir():  # else each command fails its own way, or lists none
        named = "DSH_HOME" if value else "dsh's data directory"
        raise ConfigError(f"{named} {home} is not a directory")
    return home


def read_bytes(path: Path) -> bytes:
    """The config file's bytes; ``ConfigError`` naming it when it cannot be read (not a regular
    file, over ``CONFIG_LIMIT``)."""
    try:
        return read_small_file(path, CONFIG_LIMIT)
    except UnreadableFile as exc:
        raise ConfigError(f"{path}: cannot read ({exc.reason})") from exc


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML file at ``path``, parsed."""
    return parse_toml(read_bytes(path), path)


def parse_toml(data: bytes | str, path: Path) -> dict[str, Any]:
    """``data`` (the file at ``path``) parsed; ``ConfigError`` naming the file when it is not
    UTF-8 or not TOML."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read (not UTF-8)") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
