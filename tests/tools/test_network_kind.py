"""The ``network`` approval kind (``web_fetch``): asked for under ``ask`` as a shell call is,
allowed by ``--allow network``, ``--yes`` and ``auto``, denied under ``read-only`` and in a
headless run without those flags; ``tools.web_fetch`` offers it, and an untrusted project may
not turn it back on."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.cli.options import parse_allow
from dsh.config.project import restrict_project_layer
from dsh.tools.approval import ApprovalPolicy, Decision
from dsh.tools.base import ToolContext
from dsh.tools.registry import default_tools
from dsh.transcript.call_summary import call_summary
from tests.tools.test_approval import ScriptedApprover
from tests.tools.web_server import Seen, serving

FETCH = default_tools(web_fetch=True)[-1]
ARGS = {"url": "https://example.com/"}
DSH = str(Path(sys.executable).with_name("dsh"))


def decide(policy: ApprovalPolicy, ctx: ToolContext) -> Decision:
    return asyncio.run(policy.decide(FETCH, ARGS, ctx))


def test_ask_puts_a_fetch_to_the_approver_and_always_covers_the_tool(ctx: ToolContext) -> None:
    approver = ScriptedApprover("once", "always")
    policy = ApprovalPolicy("ask", approver=approver)
    assert decide(policy, ctx).allowed
    assert decide(policy, ctx).allowed
    assert decide(policy, ctx).allowed  # "always" was answered: not asked a third time
    assert approver.asked == [("web_fetch", ARGS), ("web_fetch", ARGS)]
    assert approver.protected == [None, None]


def test_ask_deny_refuses_the_fetch(ctx: ToolContext) -> None:
    decision = decide(ApprovalPolicy("ask", approver=ScriptedApprover("deny")), ctx)
    assert not decision.allowed
    assert "web_fetch was not run: the user denied this call" in decision.reason


@pytest.mark.parametrize("mode", ["ask", "read-only"])
def test_headless_and_read_only_deny_it_naming_the_flag(mode: str, ctx: ToolContext) -> None:
    decision = decide(ApprovalPolicy(mode), ctx)  # type: ignore[arg-type]
    assert not decision.allowed
    assert "--allow network or --yes" in decision.reason


@pytest.mark.parametrize("mode", ["ask", "read-only"])
def test_allow_network_lets_it_run_unasked(mode: str, ctx: ToolContext) -> None:
    approver = ScriptedApprover()
    policy = ApprovalPolicy(mode, allow=frozenset({"network"}), approver=approver)  # type: ignore[arg-type]
    assert decide(policy, ctx).allowed
    assert approver.asked == []
    assert not decide(ApprovalPolicy(mode, allow=frozenset({"shell", "write"})), ctx).allowed  # type: ignore[arg-type]


def test_auto_runs_it() -> None:
    ctx = ToolContext(workspace=Path("/"), session_id="s", call_id="c")
    assert decide(ApprovalPolicy("auto"), ctx).allowed


def test_a_fetch_card_names_its_url() -> None:
    url = "https://example.com/docs"
    assert call_summary("web_fetch", json.dumps({"url": url})) == url
    assert call_summary("web_fetch", json.dumps({"url": url, "max_chars": 20000})) == (
        f"{url} (at most 20,000 characters)"
    )


def test_the_allow_flag_takes_network() -> None:
    assert parse_allow("bash, network") == frozenset({"shell", "network"})


def test_an_untrusted_project_may_not_turn_web_fetch_back_on() -> None:
    warned: list[str] = []
    off = {"tools": {"web_fetch": False}}
    kept = restrict_project_layer(
        {"tools": {"web_fetch": True}}, off, trusted=False, origin="p", warn=warned.append
    )
    assert kept == {"tools": {}}
    assert warned[0].startswith("p: ignored tools.web_fetch = true: the user config turns ")
    # turning it off, or on where the user did not turn it off, is the project's to say
    for value, below in ((False, {}), (True, {})):
        layer = {"tools": {"web_fetch": value}}
        assert restrict_project_layer(layer, below, trusted=False, origin="p") == layer


# ``dsh run``: a scripted model asks for a fetch of the local server.


@pytest.fixture
def server() -> Iterator[tuple[str, Seen]]:
    with serving() as running:
        yield running


def run(tmp_path: Path, url: str, *flags: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """``dsh run`` with a model that fetches ``url`` then answers; the fetch's logged result."""
    script = tmp_path / "s.json"
    calls = [{"name": "web_fetch", "arguments": {"url": url}}]
    script.write_text(json.dumps([{"toolCalls": calls}, {"text": "done"}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_") and "PROXY" not in k}
    env = {k: v for k, v in env.items() if "proxy" not in k}
    env["DSH_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [DSH, "run", "--json", "--script", str(script), *flags, "go"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    results = [
        event["data"]
        for event in map(json.loads, done.stdout.splitlines())
        if event.get("type") == "tool/result"
    ]
    assert len(results) == 1, done.stdout + done.stderr
    (result,) = results[0]["message"]["content"]
    return done, "".join(block["text"] for block in result["content"])


def test_a_headless_run_denies_a_fetch_unless_network_is_allowed(
    tmp_path: Path, server: tuple[str, Seen]
) -> None:
    base, seen = server
    _, text = run(tmp_path, f"{base}/plain.txt")
    assert "web_fetch was not run: denied by approval policy 'ask' in a headless run" in text
    assert text.endswith("The user can rerun with --allow network or --yes.")
    assert seen.requests == []
    _, text = run(tmp_path, f"{base}/plain.txt", "--allow", "network")
    assert text.endswith("\n\nline one\nline two\n")
    assert [path for path, _ in seen.requests] == ["/plain.txt"]


def test_tools_web_fetch_false_keeps_the_tool_from_the_model(
    tmp_path: Path, server: tuple[str, Seen]
) -> None:
    base, seen = server
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("[tools]\nweb_fetch = false\n")
    _, text = run(tmp_path, f"{base}/plain.txt", "--yes")
    assert text.startswith("unknown tool 'web_fetch'")
    assert seen.requests == []
