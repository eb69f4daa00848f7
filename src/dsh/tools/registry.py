"""The tool registry: specs for the request header, and one ``execute`` that never raises.

``execute`` is the single place a model's tool call becomes a ``ToolOutput``. Every mistake the
model can make — an unknown tool, arguments that are not a JSON object, a missing, unknown or
wrongly typed key — comes back as an error output with a code (``UNKNOWN_TOOL``,
``INVALID_ARGUMENT``), as does a denial (``DENIED``), a ``ToolError`` (its own code) and any other
exception inside a tool (``TOOL_FAILED``); a tool with ``codes_in_text`` (the recall tools)
gets the code at the start of a bad-argument answer's text too. Only cancellation propagates.
Every output, success or error, has known secret values masked (``SecretPolicy.mask``) before it
is returned; ``masked`` does the same for a cancelled call's answer, made by the loop from what
the tool left.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from dsh.errors import ToolError
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.args import INVALID_ARGUMENT, drop_null_optionals, json_type_name, validate_args
from dsh.tools.base import Tool, ToolContext, ToolOutput, tool_spec
from dsh.tools.files import EditFileTool, ListDirTool, ReadFileTool, WriteFileTool
from dsh.tools.search import GlobTool, GrepTool
from dsh.tools.secrets import SecretPolicy
from dsh.tools.shell import BashTool
from dsh.tools.todo import TodoWriteTool
from dsh.tools.web_fetch import WebFetchTool


class ToolRegistry:
    """The tools offered to the model, by name, in registration order."""

    def __init__(self, tools: Iterable[Tool], secrets: SecretPolicy | None = None) -> None:
        self.secrets = secrets if secrets is not None else SecretPolicy.from_environment()
        """Secret values masked in every output (see :mod:`dsh.tools.secrets`)."""
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            self._tools[tool.name] = tool

    @property
    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """Provider-neutral specs (name, description, parameters) in registration order."""
        return [copy.deepcopy(tool_spec(tool)) for tool in self._tools.values()]

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    async def execute(
        self,
        call_id: str,
        name: str,
        arguments_json: str,
        ctx: ToolContext,
        policy: ApprovalPolicy,
    ) -> ToolOutput:
        """Run one tool call; every failure comes back as an error ``ToolOutput``, and known
        secret values in the output are masked before anyone logs it."""
        return self.masked(await self._execute(call_id, name, arguments_json, ctx, policy))

    def masked(self, output: ToolOutput) -> ToolOutput:
        """``output`` with known secret values masked in its text and meta: every output that is
        logged, a cancelled call's answer with what it printed too."""
        text = self.secrets.mask(output.text)
        meta = self._masked_value(output.meta)
        if text == output.text and meta == output.meta:
            return output
        return dataclasses.replace(output, text=text, meta=meta)

    def _masked_value(self, value: Any) -> Any:
        """``value`` (a result's meta: an edit's diff lines hold the file's own lines) with
        every string in it masked, however nested."""
        if isinstance(value, str):
            return self.secrets.mask(value)
        if isinstance(value, dict):
            return {key: self._masked_value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._masked_value(item) for item in value)
        return value

    async def _execute(
        self,
        call_id: str,
        name: str,
        arguments_json: str,
        ctx: ToolContext,
        policy: ApprovalPolicy,
    ) -> ToolOutput:
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return _error(f"unknown tool {name!r}; available tools: {available}", "UNKNOWN_TOOL")
        if ctx.call_id != call_id:
            ctx = dataclasses.replace(ctx, call_id=call_id)
        try:
            args = parse_arguments(arguments_json, tool.parameters)
        except ToolError as exc:
            # a tool whose own refusals read ``CODE: …`` (the recall tools) gets that form here too
            coded = f"{exc.code}: " if getattr(tool, "codes_in_text", False) else ""
            return _error(f"{coded}{name}: {exc}", exc.code)
        try:
            decision = await policy.decide(tool, args, ctx)
        except Exception as exc:
            return _error(f"{name} was not run: approval failed: {_describe(exc)}", "DENIED")
        if not decision.allowed:
            return _error(decision.reason, "DENIED")
        try:
            return await tool.run(args, ctx)
        except ToolError as exc:
            return _error(str(exc), exc.code)
        except Exception as exc:
            return _error(f"{name} failed: {_describe(exc)}", "TOOL_FAILED")


def parse_arguments(arguments_json: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Decode the model's raw arguments and check them against ``schema``.

    An empty string means no arguments. ``null`` for an optional key counts as leaving it out.
    Raises ``ToolError(code="INVALID_ARGUMENT")`` quoting the JSON error or naming the key.
    """
    if not arguments_json.strip():
        arguments_json = "{}"
    try:
        args = json.loads(arguments_json)
    except (ValueError, RecursionError) as exc:  # ValueError: also an integer over 4300 digits
        raise ToolError(
            f"arguments are not valid JSON ({exc}); send a JSON object", code=INVALID_ARGUMENT
        ) from exc
    if not isinstance(args, dict):
        raise ToolError(
            f"arguments must be a JSON object, got {json_type_name(args)}", code=INVALID_ARGUMENT
        )
    args = drop_null_optionals(args, schema)
    validate_args(args, schema)
    for key, value in args.items():
        if _has_lone_surrogate(value):  # JSON's "\ud800" decodes; no file or command takes it
            raise ToolError(
                f"argument {key!r} is not valid Unicode (half of a UTF-16 surrogate pair)",
                code=INVALID_ARGUMENT,
            )
    return args


def _has_lone_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def default_tools(secrets: SecretPolicy | None = None, *, web_fetch: bool = False) -> list[Tool]:
    """The built-in tools (recall tools are registered by the session, not here); ``bash``
    scrubs its environment with ``secrets``, the tools that shorten an output (``bash``,
    ``read_file``, ``grep``, ``web_fetch``) never cut inside one of its values, and
    ``web_fetch`` refuses a URL holding one. ``web_fetch``: add that tool; the builder
    (``dsh.agent.wiring``) passes ``tools.web_fetch``, which is on unless configured off."""
    tools: list[Tool] = [
        ReadFileTool(secrets),
        WriteFileTool(),
        EditFileTool(),
        ListDirTool(),
        GlobTool(),
        GrepTool(secrets),
        BashTool(secrets),
        TodoWriteTool(),
    ]
    if web_fetch:
        tools.append(WebFetchTool(secrets))
    return tools


def _error(text: str, code: str) -> ToolOutput:
    return ToolOutput(text, is_error=True, code=code)


def _describe(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
