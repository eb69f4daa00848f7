"""What every command needs: settings, the store, session lookup, one-line errors."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dsh.config import Settings, dsh_home, load_settings
from dsh.errors import ConfigError, DshError, UsageError
from dsh.store import EventStore, open_store, resolve_session_id

__all__ = ["DshGroup", "cwd", "fail", "resolve_session_id", "settings", "store", "warn"]


class DshGroup(click.Group):
    """A click group whose commands report a DshError as one line (see ``fail``)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except DshError as exc:
            fail(exc)
            return None  # pragma: no cover - fail exits


def settings() -> Settings:
    return load_settings()


def store(cfg: Settings | None = None) -> EventStore:
    cfg = cfg or settings()
    return open_store(dsh_home(), cfg.store.backend)


def warn(message: str) -> None:
    click.echo(f"dsh: warning: {message}", err=True)


def fail(exc: DshError) -> None:
    """Print one line and exit: 2 for usage and configuration errors (a missing API key
    included), 1 for runtime failures."""
    message = " ".join(str(exc).split())
    click.echo(f"dsh: error: {message}", err=True)
    sys.exit(2 if isinstance(exc, UsageError | ConfigError) else 1)


def cwd() -> Path:
    return Path.cwd()
