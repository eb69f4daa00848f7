"""The MCP servers a session's tools come from, for the builder and for the faces.

``build_parts`` offers the configured servers' tools (``dsh.tools.mcp``) with the session's
scrubbed environment (``tool_secrets``, the one place it is made); a face may start them before
its first turn (``start_session_mcp_servers``: the TUI before it takes the terminal, so a
warning prints as a line, not over the screen) and stops them all when it exits
(``close_mcp_servers``; it also runs at exit).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from dsh.config import Settings
from dsh.tools.mcp import close_mcp_servers, mcp_tools, start_mcp_servers
from dsh.tools.secrets import SecretPolicy, is_secret_variable, own_secrets

__all__ = ["close_mcp_servers", "mcp_tools", "start_session_mcp_servers", "tool_secrets"]


def tool_secrets(settings: Settings, environ: Mapping[str, str] | None = None) -> SecretPolicy:
    """What the tools keep out of commands (MCP servers included) and mask in their output:
    the built-in secret names, ``tools.scrub_env``, the variables the config names as holding
    a key (``provider.api_key_env``, ``compaction.summarizer_api_key_env``: whatever their
    names), the configured ``provider.api_key``, each value of ``provider.headers`` (a
    gateway's token), each secret-named variable of an MCP server's ``env`` (the docs put
    a server's key there; ``cat $DSH_HOME/config.toml`` showed it in clear), a base URL's
    password, and the secrets dsh was given on its command line (``dsh web --token``: ``ps
    aux`` shows it)."""
    key_variables = [
        name
        for name in (settings.provider.api_key_env, settings.compaction.summarizer_api_key_env)
        if name
    ]
    patterns = [*settings.tools.scrub_env, *key_variables]
    server_keys = [
        (f"mcp.servers.{server}.env.{name}", value)
        for server, config in settings.mcp.servers.items()
        for name, value in config.env.items()
        if is_secret_variable(name, value, patterns)
    ]
    return SecretPolicy.from_environment(
        environ,
        extra_patterns=patterns,
        configured_keys=[
            ("provider.api_key", settings.provider.api_key),
            *((f"provider.headers.{n}", v) for n, v in settings.provider.headers.items()),
            *server_keys,
            *_url_passwords(settings),
            *own_secrets(),
        ],
    )


def _url_passwords(settings: Settings) -> list[tuple[str, str | None]]:
    """The password of a base URL given with one (``--base-url https://user:pass@host``: a
    command line ``ps aux`` shows, or a config file), as a configured key."""
    urls = {
        "provider.base_url": settings.provider.base_url,
        "compaction.summarizer_base_url": settings.compaction.summarizer_base_url,
    }
    found: list[tuple[str, str | None]] = []
    for name, url in urls.items():
        try:
            password = urlsplit(url).password if url else None
        except ValueError:  # not a URL the route would take either
            continue
        found.append((f"{name} password", password))
    return found


def start_session_mcp_servers(
    settings: Settings, workspace: Path, environ: Mapping[str, str] | None = None
) -> None:
    """Start the servers a session in ``workspace`` will use (no-op without any)."""
    if settings.mcp.enabled:
        secrets = tool_secrets(settings, environ)
        start_mcp_servers(settings.mcp, workspace=workspace, secrets=secrets, environ=environ)
