"""Prompt commands in the browser: the composer sends a draft starting with ``/NAME`` (none of
the page's own, ``WEB_COMMANDS``) as ``{"text": …, "command": true}``; the server sends the
prompt command's text as the prompt (``dsh.agent.prompt_commands``), from the session's
workspace and ``$DSH_HOME``, or answers 400 naming the commands there are."""

from __future__ import annotations

from pathlib import Path

import anyio.to_thread

from dsh.agent.prompt_commands import (
    BUILT_IN_COMMANDS,
    PromptCommands,
    PromptCommandSource,
    slash_command,
)
from dsh.config import dsh_home
from dsh.errors import printable_line
from dsh.web.errors import ApiError, bad_request

WEB_COMMANDS = (
    "/compact [focus], /undo [--dry-run], /context, /cost, /title [TEXT], /new, /clear, "
    "/model [NAME], /retry, /rewind [N], /fork, /approval [MODE], /diff, /help"
)
"""The page's own commands (``static/commands.js``, whose list the page's own "Unknown command"
line names, word for word this one: a browser test holds them equal)."""


class WebPromptCommands:
    """One source per workspace, so each file's warning is logged once (to the page's ⚠)."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = home
        self._sources: dict[Path, PromptCommandSource] = {}

    def _current(self, workspace: Path) -> PromptCommands:
        source = self._sources.get(workspace)
        if source is None:
            source = PromptCommandSource(self.home or dsh_home(), workspace, BUILT_IN_COMMANDS)
            self._sources[workspace] = source
        return source.current()

    async def listed(self, workspace: Path) -> list[dict[str, str]]:
        """Each prompt command as ``{name, description, scope}``, by name."""
        commands = await anyio.to_thread.run_sync(self._current, workspace)
        return [
            {"name": c.name, "description": c.description, "scope": c.scope}
            for c in (commands.by_name[name] for name in commands.names)
        ]

    async def expand(self, text: str, workspace: Path) -> str:
        """The prompt the draft ``text`` sends. Raises ``ApiError`` (400) for a draft that is
        no prompt command."""
        commands = await anyio.to_thread.run_sync(self._current, workspace)
        found = slash_command(text)
        if found is None:
            raise bad_request("a command starts with /NAME")
        expanded = commands.expand(*found)
        if expanded is None:
            yours = "".join(f", /{name}" for name in commands.names)
            name = printable_line(found[0])
            raise _unknown(f"Unknown command /{name} (commands: {WEB_COMMANDS}{yours}; // sends /)")
        return expanded


def _unknown(message: str) -> ApiError:
    return bad_request(message, "UNKNOWN_COMMAND")
