"""A workspace's own ``./.dsh/config.toml``: what of it applies (docs/usage.md, "Project
trust").

It comes with the repository, so it is not trusted by default (``dsh trust``,
:mod:`dsh.config.trust`): ``restrict_project_layer`` drops each key that would loosen safety
and each MCP server, with a line naming it. Nor can it stop dsh: an untrusted one that does not
load (unreadable, not TOML, an unknown section or key, a value refused alone or with the other
layers) is ignored whole, with one warning naming the file and the error
(``ProjectConfigError.ignored``), and the lines of the keys it would have dropped are not said.
A trusted one is refused like the user's own config: trust is pinned to the file's content, so
a file edited since it was trusted is untrusted again, and ``dsh trust`` refuses a file that
does not load.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.config.headers import shown_headers
from dsh.config.layers import merge_layer
from dsh.config.mcp_servers import anchor_project_servers, drop_project_servers
from dsh.config.reading import parse_toml, read_bytes
from dsh.config.sections import APPROVAL_STRICTNESS, ProviderSettings, ToolSettings
from dsh.config.trust import (
    PROJECT_CONFIG,
    config_digest,
    records_of,
    stale_trust_warning,
    state_of,
)
from dsh.errors import ConfigError

log = logging.getLogger("dsh.config")


class ProjectConfigError(ConfigError):
    """A workspace's project config does not load (with the other layers): ``path`` names it,
    ``reason`` says why (the file not named again)."""

    def __init__(self, path: Path, exc: ConfigError) -> None:
        said = str(exc)
        for naming in (f" (set in {path})", f" in {path}", f"{path}: "):
            said = said.replace(naming, "")
        super().__init__(f"{path}: {said}")
        self.path, self.reason = path, said

    def ignored(self) -> str:
        """The one warning line for an untrusted project config ignored whole."""
        return (
            f"{self.path}: ignored this untrusted project config, which does not load: "
            f"{self.reason} (dsh runs without it until it is fixed)"
        )


def project_config_loads(path: Path) -> bool:
    """True when the project config at ``path`` reads, parses and names only keys dsh knows:
    what an untrusted one must do to apply at all (else it is ignored whole)."""
    try:
        merge_layer({}, parse_toml(read_bytes(path), path), origin=str(path))
    except ConfigError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class ProjectLayer:
    """A workspace's ``.dsh/config.toml`` as it may apply: its keys (restricted unless trusted
    or loaded as if trusted) and the warnings of what was dropped, said only if it applies."""

    path: Path
    layer: dict[str, Any]
    trusted: bool
    """Trusted as it is now: an error in it is refused as the user's own config's is."""
    warnings: list[str]


def project_layer(
    workspace: Path,
    below: Mapping[str, Mapping[str, Any]],
    user_path: Path,
    as_if_trusted: bool,
) -> ProjectLayer | None:
    """The workspace's project config (None: it has none, or an untrusted one that cannot be
    read, parsed or names keys dsh does not know, said in one warning); ``as_if_trusted``:
    not restricted, and any such error raised as ``ProjectConfigError``."""
    path = workspace / PROJECT_CONFIG
    if not path.exists():
        return None
    records = records_of(below.get("trust", {}), user_path)  # the user's own: an error
    trusted = False
    try:
        content = read_bytes(path)  # one read: the bytes checked are the bytes applied
        state = state_of(workspace, records, config_digest(content))  # unreadable: no digest
        trusted = state == "trusted"
        stale = None if as_if_trusted else stale_trust_warning(state, path, workspace)
        if stale is not None:
            log.warning("%s", stale)
        layer = parse_toml(content, path)
        merge_layer({}, layer, origin=str(path))  # unknown keys are refused first, by name
    except ConfigError as exc:
        if trusted and not as_if_trusted:
            raise
        problem = ProjectConfigError(path, exc)
        if as_if_trusted:
            raise problem from exc
        log.warning("%s", problem.ignored())
        return None
    warnings: list[str] = []
    layer = restrict_project_layer(
        layer, below, trusted=trusted or as_if_trusted, origin=str(path), warn=warnings.append
    )
    if trusted or as_if_trusted:
        anchor_project_servers(layer, workspace)
    return ProjectLayer(path, layer, trusted, warnings)


def restrict_project_layer(
    layer: Mapping[str, Any],
    below: Mapping[str, Mapping[str, Any]],
    *,
    trusted: bool,
    origin: str,
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The project layer with every key that would loosen safety dropped (each one said by
    ``warn``, a line naming it; default: logged as a warning); ``below`` is what the defaults
    and the user config give so far.

    A project's ``tools.allow_commands`` and ``tools.deny_commands`` add to the user's (the
    lists are joined), trusted or not. Untrusted, a project may only: choose a stricter
    ``tools.approval``; turn ``web_fetch`` off, never on when the user config turned it off; add
    to ``tools.scrub_env`` and ``tools.deny_commands`` (the lists are joined); repeat the user's
    ``tools.allow_commands`` (add none); repeat the ``provider.name``, ``base_url``,
    ``provider.api_key``, ``provider.api_key_env``, ``provider.headers`` and the summariser
    route (``summarizer_provider``, ``summarizer_base_url``, ``summarizer_api_key_env``) already
    in effect (or switch the summariser to ``extractive`` or a bare model name on the
    conversation's provider); a key variable it named could be another of the user's secrets,
    sent to the endpoint, and headers it chose would go with the user's key (an organisation, a
    gateway's routing). Nor may it start a program: its ``[mcp.servers]`` are ignored (a server
    the user config already defines the same way is kept). Nobody's project may set ``[trust]``.
    """
    out: dict[str, Any] = {s: dict(v) if isinstance(v, Mapping) else v for s, v in layer.items()}
    say = warn or _log_warning

    def drop(section: str, key: str, why: str) -> None:
        value = out[section].pop(key)
        say(
            f"{origin}: ignored {section}.{key} = {_shown(key, value)}: {why}; review that file "
            "first: if you want it to apply, run `dsh trust` in that directory"
        )

    if "trust" in out:
        say(f"{origin}: ignored [trust]: only the user config may trust directories")
        del out["trust"]
    tools, provider = out.get("tools", {}), out.get("provider", {})
    users_tools = below.get("tools", {})
    users_allow = _listed(users_tools, "allow_commands")
    if not trusted and any(r not in users_allow for r in _listed(tools, "allow_commands")):
        drop("tools", "allow_commands", "a project may not let commands run unasked")
    for key in ("allow_commands", "deny_commands"):  # a project's rules add to the user's
        if isinstance(tools.get(key), list):
            own = _listed(users_tools, key)
            tools[key] = [*own, *(rule for rule in tools[key] if rule not in own)]
    if trusted:
        return out
    compaction = out.get("compaction", {})
    default_tools = ToolSettings()
    if "approval" in tools:
        current = below.get("tools", {}).get("approval", default_tools.approval)
        wanted = tools["approval"]
        if APPROVAL_STRICTNESS.get(wanted, 99) < APPROVAL_STRICTNESS.get(current, 0):
            drop("tools", "approval", f"it is looser than {current!r}")
    if tools.get("web_fetch") is True and below.get("tools", {}).get("web_fetch") is False:
        drop("tools", "web_fetch", "the user config turns web_fetch off")
    if "scrub_env" in tools and isinstance(tools["scrub_env"], list):
        tools["scrub_env"] = [*below.get("tools", {}).get("scrub_env", []), *tools["scrub_env"]]
    current_name = below.get("provider", {}).get("name", ProviderSettings().name)
    if "name" in provider and provider["name"] != current_name:
        # another provider is another endpoint, paid with the user's key for it
        drop("provider", "name", "a project may not send requests to another provider")
    if "base_url" in provider and provider["base_url"] != below.get("provider", {}).get("base_url"):
        drop("provider", "base_url", "a project may not send requests to another endpoint")
    if "api_key" in provider and provider["api_key"] != below.get("provider", {}).get("api_key"):
        drop("provider", "api_key", "a project may not send requests to another account")
    if "summarizer" in compaction:
        wanted = compaction["summarizer"]
        current = below.get("compaction", {}).get("summarizer", "extractive")
        if isinstance(wanted, str) and ":" in wanted and wanted != current:
            drop("compaction", "summarizer", "a project may not choose the summariser's provider")
    for key in ("summarizer_provider", "summarizer_base_url"):
        if key in compaction and compaction[key] != below.get("compaction", {}).get(key):
            drop("compaction", key, "a project may not choose the summariser's provider")
    for section, key in (("provider", "api_key_env"), ("compaction", "summarizer_api_key_env")):
        table = out.get(section, {})
        if key in table and table[key] != below.get(section, {}).get(key):
            drop(section, key, "a project may not choose which secret is sent")
    users_headers = below.get("provider", {}).get("headers", {})
    if "headers" in provider and provider["headers"] != users_headers:
        drop("provider", "headers", "a project may not choose what is sent with the user's key")
    drop_project_servers(out, below, origin, say)
    return out


def _listed(table: Mapping[str, Any], key: str) -> list[Any]:
    """``table[key]`` if it is a list, else no items (a wrong type is refused later)."""
    value = table.get(key, [])
    return value if isinstance(value, list) else []


def _log_warning(line: str) -> None:
    log.warning("%s", line)


def _shown(key: str, value: object) -> str:
    """A dropped project value as its warning shows it: never a key, nor a header's value."""
    if key == "api_key":
        return "(a key)"
    if key == "headers":
        return shown_headers(value)
    return json.dumps(value)
