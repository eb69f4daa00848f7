"""Search tools: ``glob`` (file names) and ``grep`` (Python regex over text files).

Both stay inside the workspace: glob patterns may not be absolute or contain ``..``, and results
whose real location is outside the workspace (symlinks pointing out) are dropped. Directories
that are rarely what the model wants (``.git``, ``node_modules``, ``.venv``) are skipped unless the
pattern or path names them. ``grep`` matches in a worker process (:mod:`dsh.tools.grep_worker`),
killed after :data:`GREP_TIMEOUT` or when its call is cancelled: a regex that backtracks
catastrophically holds the GIL and would freeze the whole harness in a thread. The worker
starts with almost none of dsh's environment (:func:`worker_environment`): no API key, no token.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from dsh.config.small_file import UnreadableFile, open_regular_file
from dsh.errors import ToolError
from dsh.tools.args import INVALID_ARGUMENT, str_arg
from dsh.tools.base import ToolContext, ToolKind, ToolOutput
from dsh.tools.secrets import SecretPolicy, is_secret_variable
from dsh.tools.workspace import display_path, is_binary, is_inside, resolve_in_workspace

SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__"})
MAX_GLOB_RESULTS = 1000
MAX_GREP_MATCHES = 500
MAX_GREP_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 10 * 1024 * 1024
GREP_TIMEOUT = 60.0
"""Seconds before a ``grep`` is stopped (its worker process killed)."""
WORKER_VARIABLES = frozenset({"LANG", "LANGUAGE", "PYTHONHOME", "PYTHONPATH", "PYTHONUTF8"})
"""What the grep worker keeps of dsh's environment (with the ``LC_*`` variables): how Python
finds dsh and decodes file names as dsh does."""


def worker_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The grep worker's environment: ``WORKER_VARIABLES`` and ``LC_*`` of ``environ``
    (default ``os.environ``), nothing else. A process started afresh is dumpable again, so any
    process of the user's (a command's background job) could read its ``/proc/PID/environ``:
    it must hold no API key, no ``DSH_WEB_TOKEN``, no secret of any name."""
    env = os.environ if environ is None else environ
    kept = {n: v for n, v in env.items() if n in WORKER_VARIABLES or n.startswith("LC_")}
    return {n: v for n, v in kept.items() if not is_secret_variable(n, v)}


class GlobTool:
    """Find files by glob pattern, relative to the workspace root."""

    name: str = "glob"
    kind: ToolKind = "read"
    description: str = (
        "Find files in the workspace by glob pattern (e.g. '**/*.py', 'src/*.ts'), relative to "
        "path (default: the workspace root). '**' matches any number of directories. Results "
        f"are sorted, relative to the root; directories end with '/'. At most {MAX_GLOB_RESULTS} "
        "results."
    )

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, e.g. '**/*.py'."},
                "path": {
                    "type": "string",
                    "description": "Directory to search in, relative to the workspace. "
                    "Default '.'.",
                },
            },
            "required": ["pattern"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """List the workspace paths matching ``args.pattern`` under ``args.path``."""
        pattern = str_arg(args, "pattern")
        path = str_arg(args, "path", ".")
        return ToolOutput(await asyncio.to_thread(_glob, pattern, ctx.workspace, path))


def _glob(pattern: str, workspace: Path, path: str = ".") -> str:
    if not pattern.strip():
        raise ToolError("pattern must not be empty", code=INVALID_ARGUMENT)
    parts = PurePosixPath(pattern).parts
    if pattern.startswith(("/", "~")) or ".." in parts:
        raise ToolError(
            f"glob pattern {pattern!r} reaches outside the workspace; patterns are relative "
            "to path (default: the workspace root) and may not be absolute or contain '..'",
            code="OUTSIDE_WORKSPACE",
        )
    root = workspace.resolve()
    base = resolve_in_workspace(path, workspace, must_exist=True)
    if not base.is_dir():
        raise ToolError(
            f"path {path!r} is not a directory; glob searches in a directory",
            code=INVALID_ARGUMENT,
        )
    named = SKIP_DIRS.intersection((*parts, *base.relative_to(root).parts))
    found: list[str] = []
    try:
        for path_found in base.glob(pattern):
            rel = path_found.relative_to(root)
            if any(p in SKIP_DIRS and p not in named for p in rel.parts):
                continue
            try:
                real = path_found.resolve()
                is_dir = path_found.is_dir()
            except (OSError, RuntimeError):
                continue
            if not is_inside(real, root) or not rel.parts:
                continue
            found.append(rel.as_posix() + ("/" if is_dir else ""))
    except ValueError as exc:
        raise ToolError(f"invalid glob pattern {pattern!r}: {exc}", code=INVALID_ARGUMENT) from exc
    if not found:
        return f"no files match {pattern!r}" + ("" if base == root else f" in {path}")
    found.sort()
    if len(found) > MAX_GLOB_RESULTS:
        note = (
            f"(showing the first {MAX_GLOB_RESULTS} of {len(found)} matches; "
            "use a narrower pattern)"
        )
        return "\n".join([*found[:MAX_GLOB_RESULTS], note])
    return "\n".join(found)


class GrepTool:
    """Search text files for a Python regular expression."""

    name: str = "grep"
    kind: ToolKind = "read"
    description: str = (
        "Search text files in the workspace for a Python regular expression (re syntax). "
        "Searches a file or, recursively, a directory (default: the workspace root), skipping "
        "binary files and .git, node_modules and .venv. Output lines are 'path:line: text'. "
        f"At most {MAX_GREP_MATCHES} matches."
    )

    def __init__(self, secrets: SecretPolicy | None = None) -> None:
        self.secrets = secrets or SecretPolicy()
        """A long line is never cut inside one of its values (the registry masks them)."""
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Python regular expression."},
                "path": {
                    "type": "string",
                    "description": "File or directory to search, relative to the workspace. "
                    "Default '.'.",
                },
            },
            "required": ["pattern"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Search ``args.path`` for lines matching ``args.pattern``, in a worker process."""
        pattern = str_arg(args, "pattern")
        path = str_arg(args, "path", ".")
        request = {
            "pattern": pattern,
            "path": path,
            "workspace": str(ctx.workspace),
            "values": [list(pair) for pair in self.secrets.values],
        }
        answer = await _run_worker(json.dumps(request).encode(), GREP_TIMEOUT)
        if "error" in answer:
            raise ToolError(str(answer["error"]), code=str(answer.get("code") or "TOOL_FAILED"))
        return ToolOutput(str(answer["text"]))


async def _run_worker(request: bytes, timeout: float) -> dict[str, Any]:
    """Run :mod:`dsh.tools.grep_worker` on ``request``; kill it at ``timeout`` or when the
    call is cancelled. ``-P``: a ``dsh`` package in the current directory (a workspace's) is
    never imported in its place."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        "-m",
        "dsh.tools.grep_worker",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=worker_environment(),
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(request), timeout)
    except TimeoutError:
        raise ToolError(
            f"grep was stopped after {timeout:g} s. A pattern with nested or overlapping "
            "repetition, like (a+)+ or (a|a)*, can take forever on a line that almost "
            "matches: simplify the pattern, or narrow the path",
            code="TIMEOUT",
        ) from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(proc.wait(), 5)
    try:
        answer = json.loads(out)
    except ValueError:
        detail = err.decode("utf-8", "replace").strip().splitlines()
        raise ToolError(
            f"grep failed: {detail[-1] if detail else f'exit code {proc.returncode}'}",
            code="TOOL_FAILED",
        ) from None
    if not isinstance(answer, dict):
        raise ToolError("grep failed: the worker gave no answer", code="TOOL_FAILED")
    return answer


def grep_text(regex: re.Pattern[str], path: str, workspace: Path, secrets: SecretPolicy) -> str:
    """The ``grep`` tool's answer (run in :mod:`dsh.tools.grep_worker`)."""
    target = resolve_in_workspace(path, workspace, must_exist=True)
    root = workspace.resolve()
    if target.is_file():
        try:
            head = _head(target)
        except UnreadableFile as exc:
            shown = display_path(target, workspace)
            raise ToolError(f"{shown} is not a regular file", code="NOT_A_FILE") from exc
        if is_binary(head):
            shown = display_path(target, workspace)
            raise ToolError(f"{shown} is a binary file", code="BINARY_FILE")
        files: Iterator[Path] = iter([target])
    else:
        files = _walk_text_files(target, root)
    matches: list[str] = []
    for file in files:
        shown = display_path(file, workspace)
        for number, line in _matching_lines(file, regex, secrets):
            if len(matches) == MAX_GREP_MATCHES:
                note = f"(stopped after {MAX_GREP_MATCHES} matches; narrow the pattern or the path)"
                return "\n".join([*matches, note])
            matches.append(f"{shown}:{number}: {line}")
    if not matches:
        return f"no matches for {regex.pattern!r} in {display_path(target, workspace)}"
    return "\n".join(matches)


def _walk_text_files(top: Path, root: Path) -> Iterator[Path]:
    """Files under ``top`` in sorted order, skipping SKIP_DIRS, escapes and binary files."""
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            file = Path(dirpath) / name
            try:
                if file.is_symlink() and not is_inside(file.resolve(), root):
                    continue
                if not file.is_file() or file.stat().st_size > MAX_GREP_FILE_BYTES:
                    continue
                if is_binary(_head(file)):
                    continue
            except (OSError, RuntimeError, UnreadableFile):
                continue
            yield file


def _matching_lines(
    file: Path, regex: re.Pattern[str], secrets: SecretPolicy
) -> Iterator[tuple[int, str]]:
    try:
        with io.TextIOWrapper(open_regular_file(file), encoding="utf-8", errors="replace") as fh:
            for number, raw in enumerate(fh, 1):
                line = raw.rstrip("\r\n")
                if regex.search(line):
                    if len(line) > MAX_GREP_LINE_CHARS:
                        line = line[: secrets.safe_cut(line, MAX_GREP_LINE_CHARS)] + "…"
                    yield number, line
    except (OSError, UnreadableFile):
        return


def _head(file: Path) -> bytes:
    """The first bytes of ``file`` to tell a binary file by; ``UnreadableFile`` when it is not
    a regular file, found on what was opened (a FIFO swapped in never blocks the grep)."""
    with open_regular_file(file) as fh:
        return fh.read(8192)
