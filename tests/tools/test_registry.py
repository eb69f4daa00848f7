from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from dsh.errors import ToolError
from dsh.events import TodoWrite
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext, ToolKind, ToolOutput
from dsh.tools.registry import ToolRegistry, default_tools, parse_arguments

AUTO = ApprovalPolicy("auto")


class Exploding:
    name = "explode"
    description = "raises"
    kind: ToolKind = "read"
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raise self.exc


def execute(
    ctx: ToolContext,
    name: str,
    arguments: str | dict[str, Any],
    policy: ApprovalPolicy = AUTO,
    registry: ToolRegistry | None = None,
) -> ToolOutput:
    reg = registry or ToolRegistry(default_tools())
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return asyncio.run(reg.execute("call-9", name, raw, ctx, policy))


def test_default_tools_are_the_eight_builtins_in_order() -> None:
    assert [t.name for t in default_tools()] == [
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "glob",
        "grep",
        "bash",
        "todo_write",
    ]
    kinds = {t.name: t.kind for t in default_tools()}
    assert kinds == {
        "read_file": "read",
        "write_file": "write",
        "edit_file": "write",
        "list_dir": "read",
        "glob": "read",
        "grep": "read",
        "bash": "shell",
        "todo_write": "meta",
    }


def test_specs_are_stable_and_json_serialisable() -> None:
    first = ToolRegistry(default_tools()).specs()
    second = ToolRegistry(default_tools()).specs()
    assert json.dumps(first, sort_keys=False) == json.dumps(second, sort_keys=False)
    assert [s["name"] for s in first][:2] == ["read_file", "write_file"]
    for spec in first:
        assert set(spec) == {"name", "description", "parameters"}
        assert spec["parameters"]["type"] == "object"


def test_specs_are_copies() -> None:
    reg = ToolRegistry(default_tools())
    reg.specs()[0]["parameters"]["properties"].clear()
    assert reg.specs()[0]["parameters"]["properties"]


def test_get_returns_tool_or_none() -> None:
    reg = ToolRegistry(default_tools())
    tool = reg.get("bash")
    assert tool is not None and tool.kind == "shell"
    assert reg.get("nope") is None


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        ToolRegistry([*default_tools(), *default_tools()])


def test_execute_happy_path_runs_the_tool(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hi\n")
    out = execute(ctx, "read_file", {"path": "a.txt"})
    assert out == ToolOutput("1\thi")


def test_execute_todo_write_passes_the_log_payload(ctx: ToolContext) -> None:
    out = execute(ctx, "todo_write", {"todos": [{"content": "x", "status": "pending"}]})
    assert not out.is_error
    assert isinstance(out.log[0], TodoWrite)


def test_unknown_tool_lists_available_tools(ctx: ToolContext) -> None:
    out = execute(ctx, "rm_rf", {})
    assert out.is_error and out.code == "UNKNOWN_TOOL"
    assert "'rm_rf'" in out.text
    assert "read_file" in out.text and "todo_write" in out.text


def test_malformed_json_is_an_error_quoting_the_json_error(ctx: ToolContext) -> None:
    out = execute(ctx, "read_file", '{"path": "a.txt"')
    assert out.is_error and out.code == "INVALID_ARGUMENT"
    assert "not valid JSON" in out.text
    assert "line 1 column" in out.text


def test_an_integer_too_long_to_convert_is_an_error_not_an_exception(ctx: ToolContext) -> None:
    out = execute(ctx, "read_file", '{"path": "a.txt", "offset": ' + "1" * 5000 + "}")
    assert out.is_error and out.code == "INVALID_ARGUMENT"
    assert "not valid JSON" in out.text


def test_a_lone_surrogate_in_an_argument_is_named_not_a_tool_failure(ctx: ToolContext) -> None:
    """JSON's ``"\\ud800"`` decodes to half a UTF-16 pair, which no file or command can take:
    it was a ``TOOL_FAILED`` with a ``UnicodeEncodeError``."""
    out = execute(ctx, "write_file", '{"path": "a.txt", "content": "x\\ud800y"}')
    assert out.is_error and out.code == "INVALID_ARGUMENT"
    assert "'content' is not valid Unicode" in out.text
    paired = execute(ctx, "write_file", '{"path": "b.txt", "content": "x\\ud83d\\ude00"}')
    assert not paired.is_error  # a whole pair is a character


def test_a_home_of_no_user_is_an_invalid_argument(ctx: ToolContext) -> None:
    out = execute(ctx, "read_file", {"path": "~no-such-user-here/x"})
    assert out.is_error and out.code == "INVALID_ARGUMENT" and "no such user" in out.text


@pytest.mark.parametrize("raw", ["[1, 2]", '"a.txt"', "42", "null"])
def test_non_object_json_is_an_error(raw: str, ctx: ToolContext) -> None:
    out = execute(ctx, "read_file", raw)
    assert out.is_error and out.code == "INVALID_ARGUMENT"
    assert "must be a JSON object" in out.text


def test_missing_required_key_is_named(ctx: ToolContext) -> None:
    out = execute(ctx, "write_file", {"path": "a.txt"})
    assert out.code == "INVALID_ARGUMENT"
    assert "'content'" in out.text


def test_extra_key_is_named(ctx: ToolContext) -> None:
    out = execute(ctx, "read_file", {"path": "a.txt", "encoding": "latin-1"})
    assert out.code == "INVALID_ARGUMENT"
    assert "'encoding'" in out.text


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("read_file", {"path": 3}, "path must be a string, got integer"),
        ("read_file", {"path": "a", "offset": "2"}, "offset must be an integer, got string"),
        ("read_file", {"path": "a", "offset": 1.5}, "offset must be an integer, got number"),
        ("read_file", {"path": "a", "limit": True}, "limit must be an integer, got boolean"),
        ("read_file", {"path": "a", "offset": 0}, "offset must be at least 1"),
        ("bash", {"command": "ls", "timeout": 601}, "timeout must be at most 600"),
        ("todo_write", {"todos": {"content": "x"}}, "todos must be an array, got object"),
        ("todo_write", {"todos": ["x"]}, "todos[0] must be an object, got string"),
        ("todo_write", {"todos": [{"content": "x"}]}, "'todos[0].status'"),
        (
            "todo_write",
            {"todos": [{"content": "x", "status": "done"}]},
            "todos[0].status must be one of",
        ),
        (
            "todo_write",
            {"todos": [{"content": "x", "status": "pending", "prio": 1}]},
            "'todos[0].prio'",
        ),
    ],
)
def test_wrong_typed_keys_are_named(
    name: str, args: dict[str, Any], needle: str, ctx: ToolContext
) -> None:
    out = execute(ctx, name, args)
    assert out.is_error and out.code == "INVALID_ARGUMENT"
    assert needle in out.text


def test_null_for_optional_key_counts_as_absent(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hi\n")
    assert execute(ctx, "read_file", {"path": "a.txt", "offset": None}).text == "1\thi"


def test_empty_arguments_string_means_no_arguments(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "f").write_text("")
    assert execute(ctx, "list_dir", "").text == "f"


def test_tool_error_becomes_error_output_with_its_code(ctx: ToolContext) -> None:
    out = execute(ctx, "read_file", {"path": "../x"})
    assert out.is_error and out.code == "OUTSIDE_WORKSPACE"


def test_exception_inside_a_tool_becomes_tool_failed(ctx: ToolContext) -> None:
    reg = ToolRegistry([Exploding(RuntimeError("kaboom"))])
    out = execute(ctx, "explode", {}, registry=reg)
    assert out.is_error and out.code == "TOOL_FAILED"
    assert "RuntimeError: kaboom" in out.text


def test_tool_error_raised_by_a_custom_tool_keeps_its_code(ctx: ToolContext) -> None:
    reg = ToolRegistry([Exploding(ToolError("nope", code="CUSTOM"))])
    out = execute(ctx, "explode", {}, registry=reg)
    assert out == ToolOutput("nope", is_error=True, code="CUSTOM")


def test_denied_call_is_an_error_output_and_does_not_run(ctx: ToolContext, workspace: Path) -> None:
    out = execute(ctx, "write_file", {"path": "a.txt", "content": "x"}, ApprovalPolicy("ask"))
    assert out.is_error and out.code == "DENIED"
    assert "--allow write" in out.text
    assert not (workspace / "a.txt").exists()


def test_invalid_arguments_are_reported_before_asking_for_approval(ctx: ToolContext) -> None:
    asked: list[str] = []

    async def approver(name: str, args: dict[str, Any], protected: str | None) -> Any:
        asked.append(name)
        return "once"

    out = execute(ctx, "bash", {"cmd": "ls"}, ApprovalPolicy("ask", approver=approver))
    assert out.code == "INVALID_ARGUMENT"
    assert asked == []


def test_approver_exception_becomes_denied(ctx: ToolContext) -> None:
    async def approver(name: str, args: dict[str, Any], protected: str | None) -> Any:
        raise OSError("terminal gone")

    out = execute(ctx, "bash", {"command": "ls"}, ApprovalPolicy("ask", approver=approver))
    assert out.code == "DENIED"
    assert "terminal gone" in out.text


def test_parse_arguments_returns_the_object() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}
    assert parse_arguments('{"a": 1}', schema) == {"a": 1}
    assert parse_arguments('{"a": 1.5}', schema) == {"a": 1.5}
