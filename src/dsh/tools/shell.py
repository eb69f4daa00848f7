"""The ``bash`` tool: one shell command in the workspace, with a timeout and an output cap.

The command runs as ``bash -c`` in its own process group (a new session), under a keeper
process (:mod:`dsh.tools.kept_shell`), with stdin closed, stderr merged into stdout, and an
environment without secrets (see :mod:`dsh.tools.secrets`). The call ends when the shell has
exited. A background process that keeps the output pipe open after the shell exits is killed
(after a short grace period, with the shell's process group); one whose output is redirected
away keeps running until dsh exits. On timeout, and when the awaiting task is cancelled,
everything the command started is killed, what left its process group (``setsid``, a
double-forked daemon) included; on Linux that holds for dsh's exit too. A cancelled call leaves
what the command printed until then, capped as a finished call's output is, in the context's
``output_so_far``, read once everything is killed (the pipe's rest included): the loop answers
the call with it. While it runs, what it prints reaches the context's ``output_tail`` (when
there is one), as the terminal shows it: the faces show its last lines under the call's card.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import signal
from typing import Any

from dsh.tools.args import int_arg, str_arg
from dsh.tools.base import ToolContext, ToolKind, ToolOutput
from dsh.tools.kept_shell import KeptShell
from dsh.tools.output_tail import OutputTail
from dsh.tools.secrets import SecretPolicy
from dsh.tools.terminal_text import TerminalText

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
OUTPUT_CAP = 30_000
PIPE_GRACE_SECONDS = 1.0
"""How long to wait for the output pipe to close once the shell itself has exited."""


class CappedOutput:
    """Text accumulated from a stream, keeping at most ``cap`` characters: the head and the
    tail. With ``terminal`` (a command's output), the text is kept as a terminal would show it
    (``dsh.tools.terminal_text``: no escape sequences; carriage returns and backspaces applied).

    With ``secrets``, a little more than each half is kept, so that a secret value across a cut
    can move the cut out of it (``SecretPolicy.safe_cut``): the output then shows the value
    whole (and masked) or not at all, never a part the mask would not recognise.

    With ``tail``, each read's text as shown also goes to it (``dsh.tools.output_tail``)."""

    def __init__(
        self,
        cap: int = OUTPUT_CAP,
        secrets: SecretPolicy | None = None,
        *,
        terminal: bool = True,
        tail: OutputTail | None = None,
    ) -> None:
        self._half = cap // 2
        self._secrets = secrets or SecretPolicy()
        self._keep = self._half + max(self._secrets.longest - 1, 0)
        self._head = ""
        self._end = ""
        self._total = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._terminal = TerminalText(max_line=cap) if terminal else None
        self._tail = tail

    def feed(self, data: bytes, *, final: bool = False) -> None:
        """Add raw bytes (decoded as UTF-8, invalid bytes replaced)."""
        shown = self._decoder.decode(data, final=final)
        if self._terminal is not None:
            shown = self._terminal.feed(shown)
            if final:
                shown += self._terminal.finish()
        if self._tail is not None:
            self._tail.feed(shown, self._terminal.pending() if self._terminal is not None else "")
        self._head, self._end, self._total = self._stored(shown)

    def _stored(self, text: str) -> tuple[str, str, int]:
        """Head, tail and total once ``text`` is added."""
        head, tail = self._head, self._end
        room = self._keep - len(head)
        if room > 0:
            head += text[:room]
            text = text[room:]
        if text:
            tail = (tail + text)[-self._keep :]
        return head, tail, self._total + len(head) - len(self._head) + len(text)

    def text(self) -> str:
        """The output (the line in progress too), with ``… [N characters omitted] …`` where
        the middle was dropped."""
        pending = self._terminal.pending() if self._terminal is not None else ""
        head, tail, total = self._stored(pending)
        if total <= 2 * self._half:  # nothing was dropped
            return head + tail
        head = head[: self._secrets.safe_cut(head, self._half)]
        start = max(len(tail) - self._half, 0)
        tail = tail[self._secrets.safe_cut(tail, start, keep="tail") :]
        omitted = total - len(head) - len(tail)
        return f"{head}\n… [{omitted} characters omitted] …\n{tail}"


async def _pump(stream: asyncio.StreamReader, out: CappedOutput) -> None:
    while chunk := await stream.read(65536):
        out.feed(chunk)
    out.feed(b"", final=True)


class BashTool:
    """Run a shell command with ``bash -c`` in the workspace."""

    name: str = "bash"
    kind: ToolKind = "shell"
    description: str = (
        "Run a shell command with 'bash -c' in the workspace root and return its combined "
        "stdout and stderr and, if non-zero, its exit code. stdin is closed, so interactive "
        f"commands get end-of-file. Default timeout {DEFAULT_TIMEOUT} s (max {MAX_TIMEOUT}); "
        f"long output is cut to about {OUTPUT_CAP} characters, keeping the start and the end."
    )

    def __init__(self, secrets: SecretPolicy | None = None) -> None:
        self.secrets = secrets or SecretPolicy()
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command to run."},
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT,
                    "description": f"Seconds before the command is killed. "
                    f"Default {DEFAULT_TIMEOUT}.",
                },
            },
            "required": ["command"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Run ``args.command``; kill what it started on timeout or cancellation."""
        command = str_arg(args, "command")
        timeout = int_arg(args, "timeout", DEFAULT_TIMEOUT, minimum=1, maximum=MAX_TIMEOUT)
        env = {**self.secrets.scrubbed_environment(), "PAGER": "cat", "GIT_PAGER": "cat"}
        shell = await KeptShell.start(command, cwd=ctx.workspace, environment=env)
        out = CappedOutput(secrets=self.secrets, tail=ctx.output_tail)
        reader = asyncio.create_task(_pump(shell.output, out))
        notes: list[str] = []
        try:
            try:
                code = await asyncio.wait_for(shell.wait_shell(), timeout)
            except TimeoutError:
                await shell.stop()
                await _finish_reading(reader, shell)
                return ToolOutput(
                    f"command timed out after {timeout} s and was killed; output so far:\n"
                    f"{out.text() or '(no output)'}",
                    is_error=True,
                    code="TIMEOUT",
                )
            if not await _finish_reading(reader, shell):
                notes.append(
                    "(background processes still holding the output open were killed; redirect "
                    "their output, e.g. `cmd > log 2>&1 &`, to keep them running)"
                )
        except BaseException:
            shell.signal_stop()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(shell.stopped(), 2)
                # Everything the command started is gone: the pipe holds the rest of its output.
                await asyncio.wait_for(reader, PIPE_GRACE_SECONDS)
            reader.cancel()
            if ctx.output_so_far is not None:
                ctx.output_so_far.text = out.text()
            raise
        finally:
            shell.release()
        return _result(out.text(), code, notes)


async def _finish_reading(reader: asyncio.Task[None], shell: KeptShell) -> bool:
    """Wait briefly for end of output; if something still holds the pipe, kill the shell's
    process group.

    Returns True if the output ended on its own.
    """
    done, _ = await asyncio.wait({reader}, timeout=PIPE_GRACE_SECONDS)
    if done:
        return True
    shell.kill_shell_group()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(reader, PIPE_GRACE_SECONDS)
    return False


def _result(text: str, code: int, notes: list[str]) -> ToolOutput:
    parts = [text] if text else []
    parts.extend(notes)
    if code == 0:
        return ToolOutput("\n".join(parts) or "(no output)")
    if code < 0:
        try:
            status = f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            status = f"killed by signal {-code}"
    else:
        status = f"exit code {code}"
    parts.append(f"[{status}]")
    return ToolOutput("\n".join(parts), is_error=True, code="NONZERO_EXIT")
