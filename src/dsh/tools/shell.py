"""The ``bash`` tool: one shell command in the workspace, with a timeout and an output cap.

The command runs as ``bash -c`` in its own process group (a new session), with stdin closed,
stderr merged into stdout, and an environment without secrets (see :mod:`dsh.tools.secrets`).
On timeout, and when the awaiting task is cancelled, the whole group is killed, so no child
outlives the call. A background process that keeps the output pipe open after
the shell exits is killed too (after a short grace period); one whose output is redirected away
keeps running.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from typing import Any

from dsh.tools.args import int_arg, str_arg
from dsh.tools.base import ToolContext, ToolKind, ToolOutput
from dsh.tools.secrets import SecretPolicy

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
OUTPUT_CAP = 30_000
PIPE_GRACE_SECONDS = 1.0
"""How long to wait for the output pipe to close once the shell itself has exited."""


class CappedOutput:
    """Text accumulated from a stream, keeping at most ``cap`` characters: the head and the tail.

    With ``secrets``, a little more than each half is kept, so that a secret value across a cut
    can move the cut out of it (``SecretPolicy.safe_cut``): the output then shows the value
    whole (and masked) or not at all, never a part the mask would not recognise."""

    def __init__(self, cap: int = OUTPUT_CAP, secrets: SecretPolicy | None = None) -> None:
        self._half = cap // 2
        self._secrets = secrets or SecretPolicy()
        self._keep = self._half + max(self._secrets.longest - 1, 0)
        self._head = ""
        self._tail = ""
        self._total = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes, *, final: bool = False) -> None:
        """Add raw bytes (decoded as UTF-8, invalid bytes replaced)."""
        text = self._decoder.decode(data, final=final)
        self._total += len(text)
        room = self._keep - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        if text:
            self._tail = (self._tail + text)[-self._keep :]

    def text(self) -> str:
        """The output, with ``… [N characters omitted] …`` where the middle was dropped."""
        if self._total <= 2 * self._half:  # nothing was dropped
            return self._head + self._tail
        head = self._head[: self._secrets.safe_cut(self._head, self._half)]
        start = max(len(self._tail) - self._half, 0)
        tail = self._tail[self._secrets.safe_cut(self._tail, start, keep="tail") :]
        omitted = self._total - len(head) - len(tail)
        return f"{head}\n… [{omitted} characters omitted] …\n{tail}"


def kill_group(pgid: int) -> None:
    """SIGKILL every process in the group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


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
        """Run ``args.command``; kill its process group on timeout or cancellation."""
        command = str_arg(args, "command")
        timeout = int_arg(args, "timeout", DEFAULT_TIMEOUT, minimum=1, maximum=MAX_TIMEOUT)
        env = {**self.secrets.scrubbed_environment(), "PAGER": "cat", "GIT_PAGER": "cat"}
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=ctx.workspace,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        out = CappedOutput(secrets=self.secrets)
        reader = asyncio.create_task(_pump(proc.stdout, out))
        notes: list[str] = []
        try:
            try:
                await asyncio.wait_for(_wait_exit(proc), timeout)
            except TimeoutError:
                kill_group(proc.pid)
                await _wait_exit(proc)
                await _finish_reading(reader, proc.pid)
                return ToolOutput(
                    f"command timed out after {timeout} s and was killed; output so far:\n"
                    f"{out.text() or '(no output)'}",
                    is_error=True,
                    code="TIMEOUT",
                )
            if not await _finish_reading(reader, proc.pid):
                notes.append(
                    "(background processes still holding the output open were killed; redirect "
                    "their output, e.g. `cmd > log 2>&1 &`, to keep them running)"
                )
        except BaseException:
            kill_group(proc.pid)
            reader.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(_wait_exit(proc), 2)
            raise
        return _result(out.text(), proc.returncode, notes)


async def _wait_exit(proc: asyncio.subprocess.Process) -> int:
    """Wait for the shell itself to exit.

    Polls ``returncode`` (set when the child is reaped) instead of ``proc.wait()``, which on
    Python 3.11 also waits for the output pipe to close — and a background child may hold it.
    """
    delay = 0.005
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return proc.returncode


async def _finish_reading(reader: asyncio.Task[None], pgid: int) -> bool:
    """Wait briefly for end of output; if something still holds the pipe, kill the group.

    Returns True if the output ended on its own.
    """
    done, _ = await asyncio.wait({reader}, timeout=PIPE_GRACE_SECONDS)
    if done:
        return True
    kill_group(pgid)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(reader, PIPE_GRACE_SECONDS)
    return False


def _result(text: str, returncode: int | None, notes: list[str]) -> ToolOutput:
    parts = [text] if text else []
    parts.extend(notes)
    code = returncode if returncode is not None else -1
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
