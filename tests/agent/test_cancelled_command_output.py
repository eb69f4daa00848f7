"""A cancelled ``bash`` call keeps what the command printed until then, marked as cut short,
capped and masked as a finished call's output, the command killed as before
(docs/architecture.md, "A cancel keeps what a command printed, and says why"). The real loop,
the scripted provider and real commands (``tests.agent.cancelling``)."""

from __future__ import annotations

from dsh.events import ToolResultEvent
from dsh.tools.registry import ToolRegistry, default_tools
from dsh.tools.secrets import SecretPolicy
from dsh.tools.shell import OUTPUT_CAP
from tests.agent.cancelling import (
    PRINTS_THEN_SLEEPS,
    bash_call,
    cancel_once_printed,
    result_text,
    results,
)
from tests.agent.conftest import Harness
from tests.tools.test_shell import gone_soon, read_pid


def test_a_cancelled_command_keeps_what_it_printed_marked_as_cut_short(harness: Harness):
    agent = harness.agent([{"toolCalls": [bash_call(PRINTS_THEN_SLEEPS)]}])
    result = cancel_once_printed(harness, agent)
    assert result.reason == "aborted"
    (answer,) = results(harness)
    assert answer.data.error is not None and answer.data.error.code == "CANCELLED"
    assert answer.data.message.content[0].is_error  # type: ignore[union-attr]
    assert result_text(answer) == (
        "[CANCELLED] this tool call was cancelled by the user and stopped before it finished; "
        "its output until then:\nline 1\nline 2\nline 3\n[cut short by the cancel]"
    )
    assert gone_soon(read_pid(harness.workspace / "sleeper.pid"))  # killed, as before
    reopened = harness.reopen()  # logged once, and the log loads with it
    assert [result_text(e) for e in reopened.events if isinstance(e, ToolResultEvent)] == [
        result_text(answer)
    ]


def test_a_cancelled_commands_long_output_is_capped_as_a_finished_ones(harness: Harness):
    """Head and tail kept, the middle omitted, about ``OUTPUT_CAP`` characters in all."""
    command = "seq 1 40000; echo LAST LINE; touch printed; sleep 60"
    agent = harness.agent([{"toolCalls": [bash_call(command)]}])
    cancel_once_printed(harness, agent)
    (answer,) = results(harness)
    text = result_text(answer)
    assert text.startswith("[CANCELLED] ") and text.endswith("LAST LINE\n[cut short by the cancel]")
    assert "its output until then:\n1\n2\n3\n" in text
    assert "characters omitted" in text
    assert len(text) < OUTPUT_CAP + 500


def test_a_secret_a_cancelled_command_printed_is_masked(harness: Harness):
    secret = "sk-cancelled-call-0123456789"
    policy = SecretPolicy(values=(("DEMO_API_KEY", secret),))
    agent = harness.agent(
        [{"toolCalls": [bash_call(f"echo key {secret}; touch printed; sleep 60")]}]
    )
    agent.tools = ToolRegistry(default_tools(policy), secrets=policy)
    cancel_once_printed(harness, agent)
    (answer,) = results(harness)
    assert secret not in result_text(answer)
    assert "key [masked DEMO_API_KEY]\n[cut short by the cancel]" in result_text(answer)


def test_a_call_the_cancel_stopped_before_it_began_says_only_that(harness: Harness):
    """The write waits for the command (``call_order``); it never starts, so it has no output
    to keep."""
    write = {"name": "write_file", "arguments": {"path": "never.txt", "content": "x"}}
    agent = harness.agent([{"toolCalls": [bash_call(PRINTS_THEN_SLEEPS), write]}])
    cancel_once_printed(harness, agent)
    texts = [result_text(e) for e in results(harness)]
    assert "line 3\n[cut short by the cancel]" in texts[0]
    assert texts[1] == "[CANCELLED] this tool call was cancelled by the user"
    assert not (harness.workspace / "never.txt").exists()
