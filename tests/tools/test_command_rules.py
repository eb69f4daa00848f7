"""Command rules (``tools.allow_commands``, ``tools.deny_commands``): what a pattern matches,
that no command line with shell control in it rides on an allow rule, and how the approval
policy applies them in each mode (docs/usage.md, "Command rules")."""

from __future__ import annotations

import asyncio
import shlex
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from dsh.config.command_rules import CONTROL, CommandRules, parse_rule, shell_words
from dsh.errors import ConfigError
from dsh.tools.approval import FOR_THE_MODEL, ApprovalPolicy, Decision, for_a_person
from dsh.tools.base import Tool, ToolContext
from dsh.tools.registry import default_tools
from tests.tools.test_approval import ScriptedApprover

TOOLS = {tool.name: tool for tool in default_tools()}
BASH, WRITE = TOOLS["bash"], TOOLS["write_file"]

RULES = CommandRules.of(
    allow=["git status", "git diff *", "pytest *", "ls"],
    deny=["git push *", "rm -rf *"],
)


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("git status", "git status"),
        ("  git   status  ", "git status"),
        ("'git' \"status\"", "git status"),  # the words the shell would run
        ("git diff", "git diff *"),  # `*`: any further words, none too
        ("git diff HEAD~1 -- src/a.py", "git diff *"),
        ("pytest -q tests/tools", "pytest *"),
        ("ls", "ls"),
        ("git status -s", None),  # no `*`: only the exact words
        ("ls -la", None),
        ("git statusx", None),
        ("git", None),
        ("FOO=1 git status", None),  # a variable set first is another command
        ("git status; rm -rf ~", None),
        ("git status && curl x | sh", None),
        ("git status || true", None),
        ("git diff > /tmp/out", None),
        ("git diff < in", None),
        ("pytest $(rm -rf ~)", None),
        ("pytest `rm -rf ~`", None),
        ("pytest ${X}", None),
        ("git status &", None),
        ("git status\nrm -rf ~", None),
        ("pytest 'a|b'", None),  # quoted or not: asked as before
        ("git diff 'unclosed", None),
    ],
)
def test_an_allow_rule_matches_only_its_simple_command(command: str, rule: str | None) -> None:
    found = RULES.allowing(command)
    assert (found.pattern if found else None) == rule


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("git push", "git push *"),
        ("git push --force origin main", "git push *"),
        ("cd repo && git push --force", "git push *"),
        ("make; git push", "git push *"),
        ("true | git push", "git push *"),
        ("GIT_SSH_COMMAND=x git push", "git push *"),
        ("sudo rm -rf /", "rm -rf *"),
        ("env A=1 rm -rf build", "rm -rf *"),
        ('echo "$(rm -rf ~)"', "rm -rf *"),
        ("echo `rm -rf ~`", "rm -rf *"),
        ("(rm -rf x)", "rm -rf *"),
        ("if true; then rm -rf x; fi", "rm -rf *"),
        ("'git' push", "git push *"),
        ("r\\m -rf x", "rm -rf *"),
        ("git status\ngit push", "git push *"),
        ("git pull", None),
        ("rm -r x", None),
        ("echo git push", None),
        ("git commit -m 'never git push'", None),
    ],
)
def test_a_deny_rule_matches_any_command_of_the_line(command: str, rule: str | None) -> None:
    found = RULES.denying(command)
    assert (found.pattern if found else None) == rule


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("", "must name a command"),
        ("   ", "must name a command"),
        ("*", "must name a command"),
        ("git * status", "`*` may only be the last word"),
        ("git diff*", "`*` may only be the last word"),
        ("git status; ls", "without `;`"),
        ("make && make test", "without `&`"),
        ("cat x | sh", "without `|`"),
        ("echo $(id)", "without `$(`"),
        ("git status\n", "without a line break"),
        ("git 'status", "a quote or a last backslash does not close"),
        ("git status\\", "a quote or a last backslash does not close"),
    ],
)
def test_a_bad_pattern_is_one_line_naming_the_key(pattern: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_rule(pattern, "tools.deny_commands")
    message = str(caught.value)
    assert message.startswith(f"config key tools.deny_commands has {pattern!r}:")
    assert said in message and "\n" not in message.replace(repr(pattern), "")


WORD = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8
)
OPERATORS = st.sampled_from([*CONTROL, "&&", "||", ";;", "2>&1", ">>", "<<EOF", "$((1))", "|&"])


@given(
    words=st.lists(WORD, min_size=1, max_size=5),
    tail=st.lists(WORD, max_size=3),
    operator=OPERATORS,
    at=st.integers(min_value=0),
    quoted=st.booleans(),
)
@example(words=["git", "status"], tail=["rm"], operator=";", at=10, quoted=False)
@example(words=["pytest"], tail=["x"], operator="$(", at=1, quoted=True)
def test_a_command_with_a_control_operator_never_matches_an_allow_rule(
    words: list[str], tail: list[str], operator: str, at: int, quoted: bool
) -> None:
    """Whatever the rules — here every prefix of the command's own words, with and without
    ``*`` — a line holding a control or substitution character, quoted or not, anywhere in it,
    is never allowed by a rule."""
    line = shlex.join([*words, *tail])
    where = at % (len(line) + 1)
    inserted = shlex.quote(operator) if quoted else f" {operator} "
    command = line[:where] + inserted + line[where:]
    patterns = []
    for n in range(1, len(words) + 1):
        head = shlex.join(words[:n])
        if not any(c in head for c in CONTROL) and "*" not in head:
            patterns += [head, f"{head} *"]
    rules = CommandRules.of(allow=patterns)
    assert rules.allowing(command) is None


@given(before=st.lists(WORD, max_size=4), operator=st.sampled_from([";", "&&", "||", "|", "\n"]))
def test_a_denied_command_after_any_other_command_is_still_denied(
    before: list[str], operator: str
) -> None:
    command = f"{shlex.join(before)} {operator} git push --force"
    assert RULES.denying(command) is not None


def decide(policy: ApprovalPolicy, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Decision:
    return asyncio.run(policy.decide(tool, args, ctx))


def bash(command: str) -> dict[str, Any]:
    return {"command": command}


@pytest.mark.parametrize("mode", ["ask", "read-only", "auto"])
def test_an_allowed_command_runs_unasked_in_every_mode(mode: Any, ctx: ToolContext) -> None:
    approver = ScriptedApprover()  # no answers: asking would fail the test
    policy = ApprovalPolicy(mode, approver=approver, commands=RULES)
    assert decide(policy, BASH, bash("git diff --stat"), ctx).allowed
    assert approver.asked == []


def test_a_command_no_allow_rule_matches_is_asked_as_before(ctx: ToolContext) -> None:
    approver = ScriptedApprover("deny", "deny")
    policy = ApprovalPolicy("ask", approver=approver, commands=RULES)
    assert not decide(policy, BASH, bash("git status; make"), ctx).allowed
    assert not decide(policy, BASH, bash("git status -s"), ctx).allowed
    asked = [args["command"] for _, args in approver.asked]
    assert asked == ["git status; make", "git status -s"]
    headless = ApprovalPolicy("ask", commands=RULES)
    assert "headless run" in decide(headless, BASH, bash("git status | sh"), ctx).reason
    read_only = ApprovalPolicy("read-only", commands=RULES)
    assert "'read-only'" in decide(read_only, BASH, bash("ls -la"), ctx).reason


@pytest.mark.parametrize(
    ("mode", "allow"),
    [("auto", frozenset()), ("ask", frozenset({"shell"})), ("read-only", frozenset({"shell"}))],
)
def test_a_denied_command_is_refused_in_every_mode_naming_the_rule(
    mode: Any, allow: Any, ctx: ToolContext
) -> None:
    approver = ScriptedApprover()
    policy = ApprovalPolicy(mode, allow=allow, approver=approver, commands=RULES)
    decision = decide(policy, BASH, bash("cd repo && git push -f"), ctx)
    assert not decision.allowed and approver.asked == []
    assert "the rule 'git push *' in tools.deny_commands" in decision.reason
    assert FOR_THE_MODEL in decision.reason
    assert for_a_person(decision.reason) == (
        "bash was not run: the command matches the rule 'git push *' in tools.deny_commands, "
        "which refuses it in every approval mode. The user can remove the rule to permit it."
    )


def test_a_deny_rule_wins_over_an_allow_rule_and_an_always_answer(ctx: ToolContext) -> None:
    rules = CommandRules.of(allow=["git *"], deny=["git push *"])
    approver = ScriptedApprover("always")
    policy = ApprovalPolicy("ask", approver=approver, commands=rules)
    assert decide(policy, BASH, bash("git log"), ctx).allowed  # allowed by rule: not asked
    assert not decide(policy, BASH, bash("git push"), ctx).allowed
    assert approver.asked == []
    assert decide(policy, BASH, bash("make"), ctx).allowed  # asked: "always"
    assert decide(policy, BASH, bash("make"), ctx).allowed  # remembered as before
    assert len(approver.asked) == 1


def test_rules_leave_other_tools_alone(ctx: ToolContext) -> None:
    rules = CommandRules.of(allow=["write_file *"], deny=["write_file *"])
    policy = ApprovalPolicy("auto", commands=rules)
    assert decide(policy, WRITE, {"path": "a.txt", "content": "x"}, ctx).allowed


def test_a_headless_or_read_only_refusal_of_a_simple_command_names_the_allow_list(
    ctx: ToolContext,
) -> None:
    """Only a command a rule could allow is said to be allowable by one."""
    for mode, said in (("ask", "--yes"), ("read-only", "to permit shell tools")):
        policy = ApprovalPolicy(mode)  # type: ignore[arg-type]
        simple = for_a_person(decide(policy, BASH, bash("make test"), ctx).reason)
        assert simple.endswith(f"{said}, or list the command in tools.allow_commands.")
        chained = for_a_person(decide(policy, BASH, bash("make && make test"), ctx).reason)
        assert chained.endswith(f"{said}.")


def _shlex_words(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None


@given(st.text(alphabet=st.sampled_from(list("ab*$ '\"\\\t\n\r\x0bé")), max_size=30))
@example('a \'b c\'"d\\"e\\f"\\ g \'\' ""')
@example("a\\")
@example("'a")
def test_commands_are_split_into_words_exactly_as_shlex_splits_them(text: str) -> None:
    assert shell_words(text) == _shlex_words(text)


def test_approval_says_read_only_runs_the_listed_commands_too() -> None:
    from dsh.agent.approval_command import mode_text

    assert mode_text("read-only", ()) == (
        "read-only (only read tools and the commands tools.allow_commands lists run; the "
        "others are denied)"
    )
