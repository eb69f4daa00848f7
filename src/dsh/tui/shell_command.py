"""``!cmd`` in the prompt box: run a shell command in the workspace, through the same ``bash``
tool the model's calls go through (its scrubbed environment, its masking of keys), and put its
output into the context: it is sent, quoted, at the head of the next prompt (so the log holds
exactly what the model saw).

The person typed the command, so it is not asked about, as a shell would not ask; approval is
for what the model proposes. Under ``read-only`` (a mode for looking, not changing) it is not
run, and the reason says how to run it. esc or ctrl+c stops a running one as a cancel stops the
model's command: everything it started is killed, and what it printed until then is its output,
marked as stopped.
"""

from __future__ import annotations

import json
import secrets

from dsh.agent.mcp_servers import tool_secrets
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import OutputSoFar, ToolContext, ToolOutput
from dsh.tools.registry import ToolRegistry, default_tools
from dsh.transcript.shell_blocks import shell_block
from dsh.tui.controller import Controller

SHELL_TOOL = "bash"
MAX_OUTPUT_CHARS = 16_000
"""Output kept for the context; a longer one keeps its head and tail."""


def shell_command(text: str) -> str | None:
    """The command of a ``!cmd`` line (None when ``text`` is not one)."""
    stripped = text.strip()
    if not stripped.startswith("!"):
        return None
    return stripped[1:].strip()


def _registry(controller: Controller) -> ToolRegistry:
    """The running agent's tools (its scrubbed environment and masking), else the defaults
    with the configured scrubbing."""
    if controller.agent is not None:
        return controller.agent.tools
    secret_policy = tool_secrets(controller.settings)
    return ToolRegistry(default_tools(secret_policy), secret_policy)


STOPPED = "[stopped before it finished: you cancelled it]"
READ_ONLY_REFUSAL = (
    "Not run: the approval mode is read-only, which runs no shell command "
    "(/approval ask lets your !commands run)."
)


async def run_shell_command(
    controller: Controller, command: str, so_far: OutputSoFar | None = None
) -> ToolOutput:
    """Run ``command`` with the ``bash`` tool, unasked (module docstring); cancelled, the tool
    kills everything the command started and leaves what it printed in ``so_far``."""
    if controller.policy.mode == "read-only":
        return ToolOutput(READ_ONLY_REFUSAL, is_error=True, code="DENIED")
    call_id = f"human-{secrets.token_hex(3)}"
    session = controller.session
    ctx = ToolContext(
        workspace=controller.options.workspace,
        session_id=session.id if session is not None else "",
        call_id=call_id,
        caller="human",
        output_so_far=so_far,
    )
    arguments = json.dumps({"command": command})
    return await _registry(controller).execute(
        call_id, SHELL_TOOL, arguments, ctx, ApprovalPolicy("auto")
    )


def stopped_output(controller: Controller, so_far: OutputSoFar) -> ToolOutput:
    """The output of a command stopped before it finished (esc, ctrl+c): what it printed until
    then (masked, as every output), marked as stopped."""
    printed = (so_far.text or "(no output)").rstrip()
    text = f"{printed}\n{STOPPED}"
    return _registry(controller).masked(ToolOutput(text, is_error=True, code="CANCELLED"))


def masked_command(controller: Controller, command: str) -> str:
    """``command`` with every key value masked as the tools mask output: the command line
    goes into the next prompt (and the log) beside its output, and a key typed into it
    (``!echo $KEY-value | rev``) was logged in clear."""
    return _registry(controller).secrets.mask(command)


def context_block(command: str, output: ToolOutput) -> str:
    """How a command's output goes into the next prompt (``command`` masked already:
    ``masked_command``)."""
    text = output.text
    if len(text) > MAX_OUTPUT_CHARS:
        half = MAX_OUTPUT_CHARS // 2
        left_out = len(text) - MAX_OUTPUT_CHARS
        text = f"{text[:half]}\n… ({left_out} characters left out) …\n{text[-half:]}"
    return shell_block(command, text, failed=output.is_error)
