"""Where dsh's own files are (``$DSH_HOME``) and how a config file is read: its bytes, then
TOML, each failure one line naming the file.

A project config is read once, as bytes: its trust is checked against the digest of those bytes
and its settings come from the same bytes (:mod:`dsh.config.trust`), so a file changed between
the two cannot be trusted for content nobody checked.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs

from dsh.errors import ConfigError


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
    """The file's bytes; ``ConfigError`` naming it when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from exc


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
