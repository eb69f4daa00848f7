"""What the model is told when its whole reply is a tool call written as text that dsh cannot
run (``provider.text_tool_calls``; docs/local-models.md, "Tool calls written as text").

Small local models answer a tool prompt with a call that is not valid JSON (a missing closing
``}``, a stray ``]``) or that names a tool dsh does not have (``{"name": "ls", …}``). Either used
to end the turn ``completed`` with the raw JSON as the answer, the model never told. Now nothing
in such a reply runs, and the model is told in a ``user/message`` of the plugin
``TEXT_CALLS_NOTICE`` (id ``{reply}-unread``) why, and what to send instead: where its JSON
breaks, or the tools closest to the name it used (``closest_tools``: a similar name, the tool
that does what a shell command does, ``bash`` for a shell command). The turn goes on; a second
such reply in a row ends it (``dsh.agent.step_outcome``).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from dsh.config.wording import closest
from dsh.events import Message, PluginSource, TextBlock
from dsh.llm.text_tool_calls import TextToolCall
from dsh.llm.types import TEXT_CALLS_NOTICE

SHELL = "bash"
"""The tool that runs a shell command (its argument ``command``)."""

_SAME_AS = {
    "ls": "list_dir",
    "dir": "list_dir",
    "tree": "list_dir",
    "cat": "read_file",
    "head": "read_file",
    "tail": "read_file",
    "less": "read_file",
    "more": "read_file",
    "open": "read_file",
    "view": "read_file",
    "find": "glob",
    "rg": "grep",
    "ag": "grep",
    "search": "grep",
    "touch": "write_file",
    "create_file": "write_file",
    "sed": "edit_file",
    "replace": "edit_file",
}
"""The dsh tool that does what a shell command (or a name small models invent) does."""

_SHELL_NAMES = frozenset(
    {
        "ls",
        "dir",
        "tree",
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "find",
        "rg",
        "ag",
        "touch",
        "sed",
        "awk",
        "cd",
        "pwd",
        "echo",
        "mkdir",
        "rm",
        "rmdir",
        "cp",
        "mv",
        "chmod",
        "wc",
        "sort",
        "uniq",
        "diff",
        "git",
        "python",
        "python3",
        "pip",
        "pytest",
        "node",
        "npm",
        "npx",
        "make",
        "cargo",
        "go",
        "curl",
        "wget",
        "tar",
        "unzip",
        "which",
        "env",
        "ps",
        "kill",
        "shell",
        "sh",
        "zsh",
        "run",
        "exec",
        "execute",
        "command",
        "cmd",
        "terminal",
        "run_command",
        "execute_command",
        "run_shell",
        "shell_command",
        "run_shell_command",
    }
)
"""Names that mean a shell command: ``bash`` runs them."""


def closest_tools(name: str, tools: Sequence[str]) -> list[str]:
    """The tools of ``tools`` a call to ``name`` (which names none) most likely meant: the one
    that does what that shell command does, then names within a small edit distance."""
    found: list[str] = []
    same = _SAME_AS.get(name.lower())
    if same is not None and same in tools:
        found.append(same)
    near = closest(name, tools)
    if near is not None:
        found.append(near)
    return list(dict.fromkeys(found))


def _as_command(call: TextToolCall) -> str:
    """The shell command a call to the shell command ``call.name`` stands for: its one string
    argument, if it has one, is the operand (``ls`` with ``path: "."`` is ``ls .``)."""
    values = list(json.loads(call.arguments).values())
    if len(values) == 1 and isinstance(values[0], str) and values[0]:
        return f"{call.name} {shlex.quote(values[0])}"
    return call.name


def _instead(call: TextToolCall, tools: Sequence[str]) -> str:
    ways = closest_tools(call.name, tools)
    if call.name.lower() in _SHELL_NAMES and SHELL in tools:
        command = json.dumps({"name": SHELL, "arguments": {"command": _as_command(call)}})
        ways.append(f"{SHELL}, as {command}")
    return f"no tool `{call.name}`" + (f": use {' or '.join(ways)}" if ways else "")


def unknown_tools_notice(
    reply_id: str, unknown: Sequence[TextToolCall], calls: int, tools: Sequence[str]
) -> Message:
    """The message telling the model that its reply ``reply_id``, ``calls`` calls written as
    text, called the tools ``unknown`` that do not exist, so none of them ran."""
    what = "it was not" if calls == 1 else f"none of its {calls} calls was"
    names = "; ".join(dict.fromkeys(_instead(call, tools) for call in unknown))
    text = (
        f"[NOT_RUN] Your reply called a tool that does not exist, so {what} run: {names}. "
        f"The tools are: {', '.join(sorted(tools))}. Send the call again with one of them."
    )
    return _notice(reply_id, text)


def unreadable_notice(reply_id: str, why: str) -> Message:
    """The message telling the model that its reply ``reply_id`` began as a tool call written as
    text that is not valid JSON (``why``), so it was not run."""
    text = (
        f"[NOT_RUN] Your reply looks like a tool call but could not be read ({why}), so it was "
        'not run. Send it again as valid JSON, nothing else: {"name": "TOOL", "arguments": {…}}.'
    )
    return _notice(reply_id, text)


def _notice(reply_id: str, text: str) -> Message:
    return Message(
        id=f"{reply_id}-unread",
        role="user",
        content=(TextBlock(text=text),),
        source=PluginSource(plugin=TEXT_CALLS_NOTICE),
    )
