"""Secrets stay out of tools: a scrubbed environment for commands, masked values in output."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext
from dsh.tools.files import MAX_LINE_CHARS
from dsh.tools.registry import ToolRegistry, default_tools
from dsh.tools.search import MAX_GREP_LINE_CHARS
from dsh.tools.secrets import SecretPolicy, is_secret_name, is_secret_variable
from dsh.tools.shell import OUTPUT_CAP, BashTool

KEYS = {
    "DEEPSEEK_API_KEY": "sk-deepseek-0123456789abcdef",
    "OPENAI_API_KEY": "sk-openai-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-0123456789abcdef",
    "GITHUB_TOKEN": "ghp_0123456789abcdefghij",
    "AWS_SECRET_ACCESS_KEY": "aws/secret/0123456789",
    "DB_PASSWORD": "hunter2-but-longer",
    "DSH_PROVIDER_API_KEY": "sk-config-0123456789",
}


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "visible-value")
    return KEYS


def run_bash(command: str, ctx: ToolContext, tool: BashTool | None = None) -> str:
    output = asyncio.run((tool or BashTool()).run({"command": command}, ctx))
    return output.text


def test_env_in_bash_shows_no_provider_key_nor_secret_named_variable(
    ctx: ToolContext, secret_env: dict[str, str]
) -> None:
    text = run_bash("env", ctx)
    assert "HARMLESS_SETTING=visible-value" in text  # the scrub is targeted, not a blank env
    for name, value in secret_env.items():
        assert name not in text and value not in text


AUDITED = {
    "GPG_PASSPHRASE": "gpgpass12345",
    "PGPASSWORD": "pgpass12345",
    "BW_SESSION": "bw-session-0123456789",
    "AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountKey=azkey0123==",
    "APP_DB": "Server=db;User Id=sa;Password=hunter22x",  # named like nothing: its value tells
    "COOKIE": "sid=cookie0123456",
    "SONAR_LOGIN": "squ_sonar0123456",
}


def test_env_in_bash_shows_none_of_the_variables_a_second_audit_saw_there(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in AUDITED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DESKTOP_SESSION", "ubuntu-wayland")
    text = run_bash("env", ctx)
    assert "DESKTOP_SESSION=ubuntu-wayland" in text
    for name, value in AUDITED.items():
        assert name not in text and value not in text


def test_a_configured_pattern_is_scrubbed_too(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORP_VAULT_ADDR", "https://vault.internal")
    monkeypatch.setenv("CORP_OTHER", "kept")
    tool = BashTool(SecretPolicy(extra_patterns=("corp_vault_*",)))
    text = run_bash("env", ctx, tool)
    assert "CORP_VAULT_ADDR" not in text and "CORP_OTHER=kept" in text


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("my_api_key", True),
        ("GH_TOKEN", True),
        ("CLIENT_SECRET_FILE", True),
        ("MYSQL_PASSWORD", True),
        ("PASSWORD", True),
        ("API_KEY", True),
        ("api_key", True),
        ("TOKEN", True),
        ("SECRET", True),
        ("SECRET_KEY", True),
        ("STRIPE_KEY", True),  # the conventional names a secret goes by, beyond *_API_KEY
        ("GH_PAT", True),
        ("SENTRY_DSN", True),
        ("NPM_AUTH", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("DATABASE_URL", True),
        ("PGPASSWD", True),
        ("DSH_PROVIDER_HEADERS", True),  # dsh's own variables that can carry a token
        ("DSH_MCP_SERVERS", True),
        ("DOCKER_AUTH_CONFIG", True),  # names an audit found reaching commands
        ("NPM_CONFIG__AUTHTOKEN", True),
        ("OPENAI_APIKEY", True),
        ("SMTP_PASS", True),
        ("CI_JOB_JWT", True),
        ("SLACK_WEBHOOK_URL", True),
        ("MYSQL_PWD", True),
        ("GPG_PASSPHRASE", True),  # names a second audit found reaching commands
        ("PASSPHRASE", True),
        ("BW_SESSION", True),
        ("OP_SESSION_my_team", True),
        ("AZURE_STORAGE_CONNECTION_STRING", True),
        ("CONNECTION_STRING", True),
        ("SQLAZURECONNSTR_MAIN", True),
        ("COOKIE", True),
        ("SESSION_COOKIE", True),
        ("YT_COOKIES", True),
        ("SONAR_LOGIN", True),
        ("DESKTOP_SESSION", False),  # left out on purpose: not secrets, and their values
        ("XDG_SESSION_TYPE", False),  # would be masked in every output
        ("DOCKER_LOGIN", False),
        ("COOKIE_DOMAIN", False),
        ("PWD", False),  # the shell's working directory: never masked
        ("OLDPWD", False),
        ("PASSENGER_APP_ENV", False),
        ("SSH_AUTH_SOCK", False),  # git over ssh needs it
        ("DSH_HOME", False),
        ("KEYBOARD_LAYOUT", False),
        ("TOKENIZER", False),
        ("PATH", False),
        ("HOME", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_a_key_value_that_reaches_output_another_way_is_masked_before_logging(
    ctx: ToolContext, workspace: Path, secret_env: dict[str, str]
) -> None:
    """The key is not in the environment of the command, but a file holds it: every tool's
    output (read_file here, bash too) is masked by the registry."""
    (workspace / ".env").write_text(f"OPENAI_API_KEY={secret_env['OPENAI_API_KEY']}\nX=1\n")
    policy = SecretPolicy.from_environment(
        configured_keys=[("provider.api_key", "conf-key-123456")]
    )
    registry = ToolRegistry(default_tools(policy), policy)
    auto = ApprovalPolicy("auto")
    read = asyncio.run(registry.execute("c1", "read_file", '{"path": ".env"}', ctx, auto))
    assert secret_env["OPENAI_API_KEY"] not in read.text
    assert "[masked OPENAI_API_KEY]" in read.text and "X=1" in read.text
    shell = asyncio.run(
        registry.execute("c2", "bash", '{"command": "cat .env; echo conf-key-123456"}', ctx, auto)
    )
    assert secret_env["OPENAI_API_KEY"] not in shell.text and "conf-key-123456" not in shell.text
    assert "[masked provider.api_key]" in shell.text


def test_an_edit_of_a_file_holding_a_key_masks_it_in_the_logged_diff_too(
    ctx: ToolContext, workspace: Path, secret_env: dict[str, str]
) -> None:
    """edit_file logs the diff it made (meta), whose context lines are the file's own: a key
    next to the edited line is masked there as in the result's text."""
    key = secret_env["OPENAI_API_KEY"]
    (workspace / ".env").write_text(f"OPENAI_API_KEY={key}\nDEBUG=0\n")
    policy = SecretPolicy.from_environment()
    registry = ToolRegistry(default_tools(policy), policy)
    edit = '{"path": ".env", "old": "DEBUG=0", "new": "DEBUG=1"}'
    result = asyncio.run(registry.execute("c1", "edit_file", edit, ctx, ApprovalPolicy("auto")))
    assert result.meta is not None and not result.is_error
    lines = result.meta["diff"]
    assert "+DEBUG=1" in lines and not any(key in line for line in lines)
    assert " OPENAI_API_KEY=[masked OPENAI_API_KEY]" in lines


def test_masking_prefers_the_longest_value_and_skips_short_ones() -> None:
    policy = SecretPolicy.from_environment(
        {"A_TOKEN": "abcdefgh", "B_TOKEN": "abcdefgh-longer", "C_TOKEN": "1", "PATH": "abcdefgh"}
    )
    assert policy.mask("x abcdefgh-longer y abcdefgh 1") == (
        "x [masked B_TOKEN] y [masked A_TOKEN] 1"
    )
    assert SecretPolicy().mask("abcdefgh") == "abcdefgh"


SPLIT_KEY = "KEYPART-A1b2C3d4-E5f6G7h8-I9j0K1l2M3n4"
"""A key whose every fragment is recognisable: no part of it may reach the log."""


def _registry_with_split_key() -> ToolRegistry:
    policy = SecretPolicy.from_environment({"OPENAI_API_KEY": SPLIT_KEY})
    return ToolRegistry(default_tools(policy), policy)


@pytest.mark.parametrize("shift", [1, 10, len(SPLIT_KEY) - 1])
def test_a_key_cut_by_the_bash_output_cap_leaks_no_part_of_it(
    ctx: ToolContext, workspace: Path, shift: int
) -> None:
    """The cap keeps the head and the tail of a long output: a key straddling either cut is
    masked whole, never shown in part (docs/usage.md, "Approval and what commands can reach":
    a key value in tool output is masked)."""
    half = OUTPUT_CAP // 2
    body = "x" * (half - shift) + SPLIT_KEY + "y" * OUTPUT_CAP + SPLIT_KEY + "z" * (half - shift)
    (workspace / "big.txt").write_text(body)
    command = '{"command": "cat big.txt"}'
    result = asyncio.run(
        _registry_with_split_key().execute("c1", "bash", command, ctx, ApprovalPolicy("auto"))
    )
    assert "characters omitted" in result.text
    assert "KEYPART" not in result.text and "K1l2M3n4" not in result.text


@pytest.mark.parametrize(
    ("tool", "arguments", "limit"),
    [
        ("read_file", {"path": "long.txt"}, MAX_LINE_CHARS),
        ("grep", {"pattern": "x"}, MAX_GREP_LINE_CHARS),
    ],
)
def test_a_key_cut_by_a_long_line_limit_leaks_no_part_of_it(
    ctx: ToolContext, workspace: Path, tool: str, arguments: dict[str, str], limit: int
) -> None:
    """read_file and grep shorten a very long line: a key across the cut is masked whole."""
    (workspace / "long.txt").write_text("x" * (limit - 10) + SPLIT_KEY + "y" * 50 + "\n")
    result = asyncio.run(
        _registry_with_split_key().execute(
            "c1", tool, json.dumps(arguments), ctx, ApprovalPolicy("auto")
        )
    )
    assert not result.is_error and "y" * 50 not in result.text  # the line was cut
    assert "KEYPART" not in result.text


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["ab", "x", "KEY-0123456789", "0123456789-KEY-ZZ"]), max_size=30),
    st.integers(0, 400),
    st.sampled_from(["head", "tail"]),
)
def test_a_safe_cut_never_splits_a_value_and_moves_only_as_far_as_it_must(parts, at, keep):
    policy = SecretPolicy.from_environment(
        {"A_TOKEN": "KEY-0123456789", "B_TOKEN": "0123456789-KEY-ZZ"}
    )
    text = "".join(parts)
    at = min(at, len(text))
    cut = policy.safe_cut(text, at, keep=keep)
    assert (cut <= at) if keep == "head" else (cut >= at)
    for _, value in policy.values:
        start = text.find(value)
        while start != -1:
            assert not start < cut < start + len(value), (text, at, cut, value)
            start = text.find(value, start + 1)
    if cut != at:  # it moved to the edge of a value that spanned the cut
        values = [value for _, value in policy.values]
        if keep == "head":
            assert any(text.startswith(v, cut) for v in values)
        else:
            assert any(text.endswith(v, 0, cut) for v in values)


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("redis://:s3cretpass@cache:6379/0", True),
        ("amqp://user:pass@broker/vhost", True),
        ("https://user@example.com/repo.git", False),  # a user, no password
        ("http://localhost:8080/path?a=b@c", False),
        ("not a url", False),
    ],
)
def test_a_url_with_a_password_is_a_secret_whatever_its_name(value: str, secret: bool) -> None:
    assert is_secret_variable("CACHE", value) is secret
    policy = SecretPolicy.from_environment({"CACHE": value, "PATH": "/bin"})
    assert ("CACHE" in policy.scrubbed_environment({"CACHE": value})) is not secret
    assert (policy.mask(f"url={value}") == f"url={value}") is not secret


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("Server=db;User Id=sa;Password=hunter22x;", True),
        ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abc123==;", True),
        (
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=r;SharedAccessKey=k1=",
            True,
        ),
        (
            "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2020&sig=x",
            True,
        ),
        ("Driver={ODBC};Server=db; pwd = s3cret", True),
        ("password=only-one-field", True),
        ("Server=db;Integrated Security=true;", False),
        ("Server=db;Password=;", False),  # no password given
        ("the password= is not set here", False),  # prose, not a connection string
    ],
)
def test_a_connection_string_with_a_password_or_key_is_a_secret_whatever_its_name(
    value: str, secret: bool
) -> None:
    assert is_secret_variable("DB", value) is secret
    policy = SecretPolicy.from_environment({"DB": value})
    assert ("DB" in policy.scrubbed_environment({"DB": value})) is not secret
    assert (policy.mask(f"db={value}") == f"db={value}") is not secret


def test_overlapping_values_are_masked_as_one_run_showing_no_part_of_either() -> None:
    """The audit's ``g[masked PGPASSWORD]``: one secret's value inside another's is masked with
    it, and two values that overlap are masked as one run, never one masked and the other's
    remainder shown beside its name."""
    policy = SecretPolicy.from_environment(
        {
            "PGPASSWORD": "pgpass12345",
            "GPG_PASSPHRASE": "gpgpass12345",
            "A_TOKEN": "abcdef12",
            "B_TOKEN": "cdef1234xyz",
            "C_TOKEN": "34xyz-and-more",
        }
    )
    assert policy.mask("gpg=gpgpass12345 pg=pgpass12345") == (
        "gpg=[masked GPG_PASSPHRASE] pg=[masked PGPASSWORD]"
    )
    assert policy.mask("[abcdef1234xyz]") == "[[masked A_TOKEN, B_TOKEN]]"
    assert policy.mask("<abcdef1234xyz-and-more>") == "<[masked A_TOKEN, B_TOKEN, C_TOKEN]>"
    assert policy.mask("abcdef12cdef1234xyz") == "[masked A_TOKEN][masked B_TOKEN]"  # apart
