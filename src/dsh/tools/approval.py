"""Approval policies: which tool calls may run without asking, which need a human, which not.

- ``auto``: everything runs (``--yes``).
- ``read-only``: read and meta tools run; other kinds only if listed in ``allow`` (and a shell
  command an allow rule matches, below).
- ``ask``: read and meta tools run; kinds in ``allow`` run; any other call is put to the
  ``approver`` callback (``"once"``, ``"always"``, ``"deny"`` or a ``DenyWithReason``: a
  denial whose reason, what the person wants done instead, the model reads). Without an
  approver (a headless run) those calls are denied.

"always" is remembered for the rest of the session: for a shell tool, for that exact command
(stripped of surrounding blanks) — one answer about ``python3 test_calc.py`` must not let
``rm -rf build`` through later; for any other tool, for the tool (every later ``write_file`` call,
say), as its prompt says.

A write to a protected path (:mod:`dsh.tools.protected`: the workspace's ``.dsh/``, ``.git/``
and the git hooks outside it, which hold configuration that runs commands) is the exception to
all of these: no "always", ``allow`` kind nor ``auto`` covers it. Every mode but ``read-only``
(which denies it as any write) puts it to the approver each time, saying why (its ``protected``
argument; a face then offers no "always", and an "always" answer counts only as "once"), and a
headless run refuses it.

Command rules (:mod:`dsh.config.command_rules`, ``tools.allow_commands`` and
``tools.deny_commands``) decide a shell command before the mode: a command a deny rule matches
is refused in every mode, ``auto`` and ``--allow bash`` too, naming the rule; one an allow rule
matches runs unasked in every mode, ``read-only`` too (the user listed it).

The CLI maps ``--yes`` to ``auto`` and ``--allow bash,write,network,mcp`` to
``allow={"shell", "write", "network", "mcp"}`` (``network``: ``web_fetch``; ``mcp``: every MCP
server's tools). A ``network`` call is asked for as a shell call is, but its "always" covers
the tool (every later ``web_fetch``), not one URL.
Denial reasons tell the model not to work around them and the human what would let the call
through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, get_args

from dsh.config.command_rules import CommandRules, simple_words
from dsh.errors import ConfigError
from dsh.tools.base import Tool, ToolContext, ToolKind
from dsh.tools.protected import ProtectedWrite, protected_write
from dsh.tools.shell import BashTool

ApprovalMode = Literal["ask", "auto", "read-only"]
REASON_LIMIT = 2_000
"""The most characters a denial's reason keeps (the faces take no more, ``dsh web`` refuses
more)."""


@dataclass(frozen=True, slots=True)
class DenyWithReason:
    """A denial with what the person said (what to do instead): the model reads it in the call's
    result. ``reason`` is taken through :func:`one_line_reason` by the policy."""

    reason: str


ApprovalChoice = Literal["once", "always", "deny"]
ApprovalAnswer = ApprovalChoice | DenyWithReason
Approver = Callable[[str, dict[str, Any], str | None], Awaitable[ApprovalAnswer]]
"""``approver(tool_name, args, protected)``: asks the human; returns ``once``, ``always``,
``deny`` or a :class:`DenyWithReason`. ``protected`` is None for an ordinary call; for a write
to a protected path it is the sentence saying why the call is asked every time (``writing
.dsh/config.toml changes dsh's own configuration, which can run commands``), and the face
offers no "always" for it."""

ASKED_CALL: ContextVar[str | None] = ContextVar("dsh_asked_call", default=None)
"""While an approver is asked: the id of the tool call it is asked about (a face that shows the
call's card marks that one, two identical calls told apart); None outside."""

ALWAYS_ALLOWED: frozenset[ToolKind] = frozenset({"read", "meta"})
ALLOW_FLAG_NAMES: dict[ToolKind, str] = {
    "shell": "bash",
    "write": "write",
    "network": "network",
    "read": "read",
    "mcp": "mcp",
}
"""How each kind is spelled in ``--allow`` (the CLI maps ``bash`` to the ``shell`` kind)."""

FOR_THE_MODEL = (
    "Do not retry it or change the command to get around this: finish without it, and tell the "
    "user what you needed it for."
)
"""The policy denials' sentence for the model alone: without it a small model took the rerun
advice as part of its command (``python3 test_calc.py --allow``). A face that shows a denial to
a person leaves it out (:func:`for_a_person`)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of :meth:`ApprovalPolicy.decide`: allowed, or denied with a reason."""

    allowed: bool
    reason: str = ""

    @classmethod
    def allow(cls) -> Decision:
        """Let the call run."""
        return cls(True)

    @classmethod
    def deny(cls, reason: str) -> Decision:
        """Refuse the call; ``reason`` becomes the error tool result."""
        return cls(False, reason)


class ApprovalPolicy:
    """Decides, per tool call, whether it may run. Holds the session's "always" answers."""

    def __init__(
        self,
        mode: ApprovalMode,
        allow: frozenset[ToolKind] = frozenset(),
        approver: Approver | None = None,
        commands: CommandRules | None = None,
    ) -> None:
        if mode not in get_args(ApprovalMode):
            choices = ", ".join(get_args(ApprovalMode))
            raise ConfigError(f"tools.approval must be one of {choices}; got {mode!r}")
        self.mode: ApprovalMode = mode
        self.allow = frozenset(allow)
        self.approver = approver
        self.commands = commands or CommandRules()
        self._always: set[str] = set()
        self._always_commands: set[tuple[str, str]] = set()

    @property
    def always_allowed_tools(self) -> frozenset[str]:
        """Tools (not shell tools) the human answered "always" for in this session."""
        return frozenset(self._always)

    @property
    def always_allowed_commands(self) -> frozenset[tuple[str, str]]:
        """``(shell tool, command)`` pairs the human answered "always" for in this session."""
        return frozenset(self._always_commands)

    async def decide(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Decision:
        """Allow or deny one call of ``tool`` with ``args``; may ask the approver (with
        ``ASKED_CALL`` set to the call's id)."""
        asked = ASKED_CALL.set(ctx.call_id)
        try:
            return await self._decide(tool, args, ctx)
        finally:
            ASKED_CALL.reset(asked)

    async def _decide(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Decision:
        if tool.kind in ALWAYS_ALLOWED:
            return Decision.allow()
        command = shell_command(tool, args)
        if command is not None:
            denied = self.commands.denying(command)
            if denied is not None:
                return Decision.deny(
                    f"{tool.name} was not run: the command matches the rule {denied.pattern!r} "
                    f"in tools.deny_commands, which refuses it in every approval mode. "
                    f"{FOR_THE_MODEL} The user can remove the rule to permit it."
                )
            if self.commands.allowing(command) is not None:
                return Decision.allow()
        protected = None
        if tool.kind == "write":  # resolving the path reads the disk: off the event loop
            protected = await asyncio.to_thread(protected_write, tool, args, ctx.workspace)
        if protected is not None and (self.mode != "read-only" or tool.kind in self.allow):
            return await self._ask_each_time(tool, args, protected)
        if self.mode == "auto" or tool.kind in self.allow:
            return Decision.allow()
        if self.mode == "read-only":
            return Decision.deny(
                f"{tool.name} was not run: denied by approval policy 'read-only', which allows "
                f"only read tools. {FOR_THE_MODEL} The user can rerun with "
                f"--allow {_flag(tool.kind)} or --yes to permit {tool.kind} tools"
                f"{_rule_hint(command)}."
            )
        if tool.name in self._always or (tool.name, command) in self._always_commands:
            return Decision.allow()
        if self.approver is None:
            return Decision.deny(
                f"{tool.name} was not run: denied by approval policy 'ask' in a headless run, "
                f"which has no one to ask. {FOR_THE_MODEL} The user can rerun with "
                f"--allow {_flag(tool.kind)} or --yes{_rule_hint(command)}."
            )
        answer = await self.approver(tool.name, args, None)
        if answer == "always":
            if command is None:
                self._always.add(tool.name)
            else:
                self._always_commands.add((tool.name, command))
            return Decision.allow()
        if answer == "once":
            return Decision.allow()
        return _denied_by_the_user(tool, answer)

    async def _ask_each_time(
        self, tool: Tool, args: dict[str, Any], protected: ProtectedWrite
    ) -> Decision:
        """A protected write: put to the approver every time (its "always" is only "once" and
        is not remembered), refused with no one to ask."""
        if self.approver is None:
            return Decision.deny(
                f"{tool.name} was not run: {protected.why}, so no flag or setting lets the "
                f"model make it unasked, and a headless run has no one to ask. {FOR_THE_MODEL} "
                "If the change is wanted, the user can make it themselves."
            )
        answer = await self.approver(tool.name, args, protected.why)
        if answer in ("once", "always"):
            return Decision.allow()
        return _denied_by_the_user(tool, answer)


def _denied_by_the_user(tool: Tool, answer: ApprovalAnswer) -> Decision:
    """A person's denial; with a reason (one printable line, at most ``REASON_LIMIT``
    characters), it ends the first line (a collapsed card shows it), the advice on the next."""
    reason = one_line_reason(answer.reason) if isinstance(answer, DenyWithReason) else ""
    if reason:
        return Decision.deny(
            f"{tool.name} was not run: the user denied this call and said: {reason}\n"
            "Do not retry it as is; follow what the user said."
        )
    return Decision.deny(
        f"{tool.name} was not run: the user denied this call. Do not retry it as is; "
        "ask the user how to proceed or take a different approach."
    )


def one_line_reason(text: str) -> str:
    """A denial's reason as it is logged: one line of printable characters (line breaks, tabs
    and other blanks become one space; other control and format characters, lone surrogates
    included, go), without blanks around it, cut at ``REASON_LIMIT`` characters."""
    kept = "".join(c if c.isprintable() else " " if c.isspace() else "" for c in text)
    return " ".join(kept.split())[:REASON_LIMIT]


def always_label(tool_name: str) -> str:
    """How the faces label the "always" answer about a call of ``tool_name``, saying what it
    lets run unasked for the rest of the session: for the shell tool, that command
    (:func:`shell_command`); for any other, every call of the tool."""
    if tool_name == BashTool.name:
        return "Always allow this command"
    return f"Always allow {tool_name}"


def for_a_person(denial: str) -> str:
    """A denial's text as a person should read it: without the sentence meant for the model."""
    return " ".join(denial.replace(FOR_THE_MODEL, "").split())


def shell_command(tool: Tool, args: dict[str, Any]) -> str | None:
    """The command a shell tool's call would run (what "always" is scoped to), else ``None``.

    A shell call without a string ``command`` gets ``""``: an "always" for it covers only other
    calls as malformed, never a real command.
    """
    if tool.kind != "shell":
        return None
    command = args.get("command")
    return command.strip() if isinstance(command, str) else ""


def _rule_hint(command: str | None) -> str:
    """For a single simple shell command (one a rule could allow): how to let it through for
    good; else nothing."""
    if command is None or not simple_words(command):
        return ""
    return ", or list the command in tools.allow_commands"


def _flag(kind: ToolKind) -> str:
    return ALLOW_FLAG_NAMES.get(kind, kind)
