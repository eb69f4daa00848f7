from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh.errors import ConfigError
from dsh.tools.approval import (
    FOR_THE_MODEL,
    REASON_LIMIT,
    ApprovalAnswer,
    ApprovalPolicy,
    Decision,
    DenyWithReason,
    always_label,
    for_a_person,
)
from dsh.tools.base import Tool, ToolContext, ToolKind
from dsh.tools.registry import default_tools

TOOLS = {tool.name: tool for tool in default_tools()}
READ, WRITE, SHELL, META = (
    TOOLS["read_file"],
    TOOLS["write_file"],
    TOOLS["bash"],
    TOOLS["todo_write"],
)


def decide(policy: ApprovalPolicy, tool: Tool, ctx: ToolContext) -> Decision:
    return asyncio.run(policy.decide(tool, {}, ctx))


class ScriptedApprover:
    """Answers from a list and records each question."""

    def __init__(self, *answers: ApprovalAnswer) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.protected: list[str | None] = []
        """Each question's ``protected`` sentence (None: an ordinary call)."""

    async def __call__(
        self, tool_name: str, args: dict[str, Any], protected: str | None
    ) -> ApprovalAnswer:
        self.asked.append((tool_name, args))
        self.protected.append(protected)
        return self.answers.pop(0)


@pytest.mark.parametrize("tool", [READ, WRITE, SHELL, META], ids=lambda t: t.name)
def test_auto_allows_every_kind(tool: Tool, ctx: ToolContext) -> None:
    assert decide(ApprovalPolicy("auto"), tool, ctx).allowed


@pytest.mark.parametrize(
    ("tool", "allowed"),
    [(READ, True), (META, True), (WRITE, False), (SHELL, False)],
    ids=["read", "meta", "write", "shell"],
)
def test_read_only_allows_only_read_and_meta(tool: Tool, allowed: bool, ctx: ToolContext) -> None:
    decision = decide(ApprovalPolicy("read-only"), tool, ctx)
    assert decision.allowed is allowed
    if not allowed:
        assert "read-only" in decision.reason
        assert "--yes" in decision.reason


def test_read_only_honours_allow(ctx: ToolContext) -> None:
    policy = ApprovalPolicy("read-only", allow=frozenset({"write"}))
    assert decide(policy, WRITE, ctx).allowed
    assert not decide(policy, SHELL, ctx).allowed


def test_ask_allows_read_and_meta_without_asking(ctx: ToolContext) -> None:
    approver = ScriptedApprover()
    policy = ApprovalPolicy("ask", approver=approver)
    assert decide(policy, READ, ctx).allowed
    assert decide(policy, META, ctx).allowed
    assert approver.asked == []


def test_ask_once_allows_this_call_and_asks_again_next_time(ctx: ToolContext) -> None:
    approver = ScriptedApprover("once", "deny")
    policy = ApprovalPolicy("ask", approver=approver)
    assert asyncio.run(policy.decide(SHELL, {"command": "ls"}, ctx)).allowed
    assert not decide(policy, SHELL, ctx).allowed
    assert approver.asked == [("bash", {"command": "ls"}), ("bash", {})]


def test_ask_always_for_a_shell_call_covers_that_exact_command_only(ctx: ToolContext) -> None:
    approver = ScriptedApprover("always", "deny", "deny")
    policy = ApprovalPolicy("ask", approver=approver)
    test = {"command": "python3 test_calc.py"}
    assert asyncio.run(policy.decide(SHELL, test, ctx)).allowed
    # the same command again (surrounding blanks aside) runs without asking
    again = {"command": "  python3 test_calc.py\n"}
    assert asyncio.run(policy.decide(SHELL, again, ctx)).allowed
    assert len(approver.asked) == 1
    assert policy.always_allowed_commands == frozenset({("bash", "python3 test_calc.py")})
    assert policy.always_allowed_tools == frozenset()
    # any other command, even one that starts with the approved one, is asked about
    longer = {"command": "python3 test_calc.py && rm -rf build"}
    assert not asyncio.run(policy.decide(SHELL, longer, ctx)).allowed
    assert not asyncio.run(policy.decide(SHELL, {"command": "rm -rf build"}, ctx)).allowed
    assert len(approver.asked) == 3


def test_the_always_answer_is_labelled_with_what_it_lets_through() -> None:
    assert always_label(SHELL.name) == "Always allow this command"
    assert always_label(WRITE.name) == "Always allow write_file"


def test_ask_always_remembers_the_tool_for_the_session(ctx: ToolContext) -> None:
    approver = ScriptedApprover("always", "deny")
    policy = ApprovalPolicy("ask", approver=approver)
    assert decide(policy, WRITE, ctx).allowed
    assert decide(policy, WRITE, ctx).allowed
    assert len(approver.asked) == 1
    assert policy.always_allowed_tools == frozenset({"write_file"})
    # "always" is per tool name: edit_file (same kind) is still asked about
    assert not decide(policy, TOOLS["edit_file"], ctx).allowed
    assert len(approver.asked) == 2


def test_ask_deny_refuses_with_a_reason(ctx: ToolContext) -> None:
    decision = decide(ApprovalPolicy("ask", approver=ScriptedApprover("deny")), SHELL, ctx)
    assert not decision.allowed
    assert "user denied" in decision.reason


PLAIN_DENIAL = (
    "bash was not run: the user denied this call. Do not retry it as is; ask the user how to "
    "proceed or take a different approach."
)


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("use `make test` instead", "use `make test` instead"),
        ("  first\nsecond\r\n\tthird\u2028fourth  ", "first second third fourth"),
        ("no\x1b[31mred\x07 \u202eevil\ud800 here", "no[31mred evil here"),
        ("é" * (REASON_LIMIT + 5), "é" * REASON_LIMIT),
    ],
    ids=["plain", "line-breaks", "controls", "too-long"],
)
def test_a_deny_with_a_reason_gives_the_model_one_printable_line(
    typed: str, said: str, ctx: ToolContext
) -> None:
    approver = ScriptedApprover(DenyWithReason(typed))
    decision = decide(ApprovalPolicy("ask", approver=approver), SHELL, ctx)
    assert not decision.allowed
    assert decision.reason == (
        f"bash was not run: the user denied this call and said: {said}\n"
        "Do not retry it as is; follow what the user said."
    )


@pytest.mark.parametrize("typed", ["", "  \n\t ", "\x00\x1b"], ids=["empty", "blank", "ctl"])
def test_a_deny_with_a_reason_that_says_nothing_is_a_plain_deny(
    typed: str, ctx: ToolContext
) -> None:
    approver = ScriptedApprover(DenyWithReason(typed), "deny")
    policy = ApprovalPolicy("ask", approver=approver)
    assert decide(policy, SHELL, ctx).reason == PLAIN_DENIAL == decide(policy, SHELL, ctx).reason


def test_a_protected_writes_deny_carries_its_reason_too(ctx: ToolContext) -> None:
    approver = ScriptedApprover(DenyWithReason("leave the config alone"))
    policy = ApprovalPolicy("auto", approver=approver)
    args = {"path": ".dsh/config.toml", "content": "[tools]\n"}
    decision = asyncio.run(policy.decide(WRITE, args, ctx))
    assert approver.protected[0] is not None
    assert decision.reason.startswith(
        "write_file was not run: the user denied this call and said: leave the config alone\n"
    )


@pytest.mark.parametrize(("tool", "flag"), [(WRITE, "write"), (SHELL, "bash")], ids=["w", "s"])
def test_ask_headless_denies_write_and_shell_with_advice(
    tool: Tool, flag: str, ctx: ToolContext
) -> None:
    decision = decide(ApprovalPolicy("ask"), tool, ctx)
    assert not decision.allowed
    assert "denied by approval policy 'ask' in a headless run" in decision.reason
    assert f"rerun with --allow {flag} or --yes" in decision.reason
    # the model is told not to work around it; a person reads only what would let it through
    assert FOR_THE_MODEL in decision.reason
    assert FOR_THE_MODEL not in for_a_person(decision.reason)
    assert f"rerun with --allow {flag} or --yes" in for_a_person(decision.reason)


def test_ask_headless_allows_read_and_meta(ctx: ToolContext) -> None:
    policy = ApprovalPolicy("ask")
    assert decide(policy, READ, ctx).allowed
    assert decide(policy, META, ctx).allowed


@pytest.mark.parametrize(
    ("allow", "write_ok", "shell_ok"),
    [
        (frozenset({"write"}), True, False),
        (frozenset({"shell"}), False, True),
        (frozenset({"shell", "write"}), True, True),
    ],
)
def test_ask_headless_with_allow(
    allow: frozenset[ToolKind], write_ok: bool, shell_ok: bool, ctx: ToolContext
) -> None:
    policy = ApprovalPolicy("ask", allow=allow)
    assert decide(policy, WRITE, ctx).allowed is write_ok
    assert decide(policy, SHELL, ctx).allowed is shell_ok


def test_ask_with_allow_skips_the_approver(ctx: ToolContext) -> None:
    approver = ScriptedApprover()
    policy = ApprovalPolicy("ask", allow=frozenset({"shell"}), approver=approver)
    assert decide(policy, SHELL, ctx).allowed
    assert approver.asked == []


def test_unknown_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"tools\.approval"):
        ApprovalPolicy("yolo")  # type: ignore[arg-type]
