"""What changed in the workspace since its last commit: ``/diff`` in the faces.

The changes are git's (``git diff HEAD``: staged and unstaged alike, against the last commit;
in a repository without a commit yet, against the empty tree), one ``FileChange`` per file,
followed by the untracked files git does not ignore (named only, as ``git status`` lists
them). It is dsh that runs git here, not the model, so nothing is asked; git runs as
``dsh.tools.own_git`` runs it — no external diff program, text conversion, filter driver,
filesystem monitor or fetch (each runs a command a repository's config could name), in the
tools' scrubbed environment narrowed to what git reads —, and without looking into
submodules' work trees (a submodule's new commit shows, its uncommitted changes do not: git
would run ``git status`` there, under the submodule's own config), with a timeout and a cap on
what is read.

Anything that stops it — no git, not a repository, a timeout — is a ``WorkspaceDiffError``
with one line saying which.
"""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from dsh.errors import DshError
from dsh.tools.own_git import GitConfigError, filter_settings, git_environment, git_program

GIT_TIMEOUT_S = 10.0
MAX_DIFF_BYTES = 4 * 1024 * 1024
"""Beyond this much diff text the rest is left out, and said to be."""
UNTRACKED_SHOWN = 200
"""Untracked files named in the text; the rest are counted."""
SHOWN_LINES = 5000
"""Diff lines a face shows (``within_lines``); the rest are counted: a view of hundreds of
thousands of rows helps no one and costs the face its speed (`git diff` in a shell shows them
all)."""
NO_CHANGES = "No changes since the last commit."
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""Git's id of the empty tree: what a repository without a commit is compared against."""


class WorkspaceDiffError(DshError):
    """The workspace's changes could not be read (the message says why, in one line)."""


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    lines: tuple[str, ...]
    """The file's unified diff lines, from its ``--- a/…`` header (a binary file: git's one
    ``Binary files … differ`` line)."""


@dataclass(frozen=True, slots=True)
class WorkspaceDiff:
    files: tuple[FileChange, ...]
    untracked: tuple[str, ...]
    truncated: bool = False
    """The diff was longer than ``MAX_DIFF_BYTES``: the last file shown may be cut short and
    later ones are missing."""

    @property
    def empty(self) -> bool:
        return not self.files and not self.untracked


def workspace_diff(workspace: Path) -> WorkspaceDiff:
    """The changes in ``workspace`` since its last commit (module docstring)."""
    if not workspace.is_dir():
        raise WorkspaceDiffError(f"{workspace} is not a directory")
    env = git_environment()
    try:
        inside = _git(workspace, env, "rev-parse", "--is-inside-work-tree").strip() == "true"
    except WorkspaceDiffError as exc:
        if "not a git repository" not in str(exc):
            raise
        inside = False
    if not inside:
        raise WorkspaceDiffError(f"{workspace} is not in a git work tree: no changes to show")
    base = "HEAD" if _has_commit(workspace, env) else EMPTY_TREE
    text, truncated = _git_capped(
        workspace, _without_filters(workspace, env),
        "diff", base, "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty",
        "--relative", "--",
    )  # fmt: skip
    untracked = _git(workspace, env, "ls-files", "--others", "--exclude-standard", "-z")
    return WorkspaceDiff(
        files=tuple(split_files(text)),
        untracked=tuple(name for name in untracked.split("\0") if name),
        truncated=truncated,
    )


def split_files(text: str) -> list[FileChange]:
    """``git diff`` output as one change per file (each starts with ``diff --git``); the
    ``diff --git`` and ``index`` lines are dropped, the path is the new side's."""
    changes: list[FileChange] = []
    block: list[str] = []
    for line in text.splitlines():
        if line.startswith("diff --git "):
            if block:
                changes.append(_change(block))
            block = [line]
        elif block:
            block.append(line)
    if block:
        changes.append(_change(block))
    return changes


def within_lines(
    diff: WorkspaceDiff, shown_lines: int = SHOWN_LINES
) -> tuple[tuple[FileChange, ...], int]:
    """The file changes a face shows of ``diff``, at most ``shown_lines`` lines in all (the
    last one shown cut short, the files after it left out), and how many lines were left
    out."""
    shown: list[FileChange] = []
    left = shown_lines
    hidden = 0
    for change in diff.files:
        if left <= 0:
            hidden += len(change.lines)
            continue
        kept = change.lines[:left]
        hidden += len(change.lines) - len(kept)
        left -= len(kept)
        shown.append(change if len(kept) == len(change.lines) else FileChange(change.path, kept))
    return tuple(shown), hidden


def render_workspace_diff(diff: WorkspaceDiff) -> str:
    """The changes as plain text: each file's diff, then the untracked files."""
    if diff.empty:
        return NO_CHANGES
    parts = ["\n".join(change.lines) for change in diff.files]
    if diff.truncated:
        parts.append(
            f"(the diff is longer than {MAX_DIFF_BYTES // (1024 * 1024)} MiB: the rest is left out)"
        )
    if diff.untracked:
        shown = [f"  {name}" for name in diff.untracked[:UNTRACKED_SHOWN]]
        if len(diff.untracked) > UNTRACKED_SHOWN:
            shown.append(f"  … and {len(diff.untracked) - UNTRACKED_SHOWN} more")
        parts.append("Untracked files:\n" + "\n".join(shown))
    return "\n\n".join(parts)


def _change(block: list[str]) -> FileChange:
    header = block[0]
    kept = [line for line in block[1:] if not line.startswith(("index ", "similarity index "))]
    path = next(
        (line[6:] for line in kept if line.startswith("+++ b/")),
        next((line[6:] for line in kept if line.startswith("--- a/")), _path_of(header)),
    )
    return FileChange(path, tuple(kept))


def _path_of(header: str) -> str:
    """The new side's path of a ``diff --git a/X b/Y`` line (a binary or mode-only change has
    no ``+++`` line to name it)."""
    _, _, new = header.partition(" b/")
    return new or header


def _has_commit(workspace: Path, env: dict[str, str]) -> bool:
    try:
        _git(workspace, env, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except WorkspaceDiffError:
        return False
    return True


def _without_filters(workspace: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` with every filter driver the repository's config names emptied (a filter's
    ``clean`` command runs on each changed file git compares)."""
    try:
        return git_environment(settings=filter_settings(workspace, env, timeout=GIT_TIMEOUT_S))
    except GitConfigError as exc:
        raise WorkspaceDiffError(f"git config failed: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise WorkspaceDiffError(f"git took over {GIT_TIMEOUT_S:g} s in {workspace}") from exc
    except OSError as exc:
        raise WorkspaceDiffError("git is not installed (no `git` on PATH)") from exc


def _git(workspace: Path, env: dict[str, str], *args: str) -> str:
    return _git_capped(workspace, env, *args)[0]


def _git_capped(workspace: Path, env: dict[str, str], *args: str) -> tuple[str, bool]:
    """Git's output for ``args`` in ``workspace`` with ``env`` (at most ``MAX_DIFF_BYTES``, and
    whether more was left out: git is stopped there rather than read to the end)."""
    try:
        command = [git_program(), "-C", str(workspace), *args]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=env,
        )  # fmt: skip
    except FileNotFoundError as exc:
        raise WorkspaceDiffError("git is not installed (no `git` on PATH)") from exc
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        process.kill()

    timer = threading.Timer(GIT_TIMEOUT_S, stop)
    timer.start()
    try:
        out, err = _read_capped(process)
    finally:
        timer.cancel()
    truncated = len(out) > MAX_DIFF_BYTES
    if truncated:
        process.kill()
    process.wait()
    if timed_out.is_set():
        raise WorkspaceDiffError(f"git took over {GIT_TIMEOUT_S:g} s in {workspace}")
    if process.returncode != 0 and not truncated:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"exit status {process.returncode}"
        raise WorkspaceDiffError(f"git {args[0]} failed: {why}")
    return out[:MAX_DIFF_BYTES].decode("utf-8", "replace"), truncated


def _read_capped(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Standard output up to one byte past the cap, then standard error (git writes little
    there; a diff's own size is what the cap is for)."""
    assert process.stdout is not None and process.stderr is not None
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_DIFF_BYTES:
        chunk = process.stdout.read(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > MAX_DIFF_BYTES:
        process.kill()
    err = process.stderr.read(65536)
    process.stdout.close()
    process.stderr.close()
    return b"".join(chunks), err
