"""Git as dsh runs it on its own, never asking: ``/diff`` (``dsh.agent.workspace_diff``), the
hooks directory a write is checked against (``dsh.tools.git_hooks``), the bench's version line.

Nothing is approved before these run, so git must run no program a repository's config could
name, and must see no secret:

- :func:`git_environment`: the tools' scrubbed environment (``dsh.tools.secrets``: no provider
  key, no secret-named variable), and of it only what git reads (``KEPT_VARIABLES`` and the
  ``GIT_*`` variables), with ``GIT_OPTIONAL_LOCKS=0`` (git writes no index, so no
  ``post-index-change`` hook), no terminal prompt, and no transport at all
  (``GIT_ALLOW_PROTOCOL`` empty, overriding any ``protocol.*.allow``; and
  ``GIT_NO_LAZY_FETCH``, which gits since the May 2024 releases, 2.39.4 among them, read): a
  partial clone's missing object would otherwise be fetched, running ``core.sshCommand``,
  ``remote.<name>.uploadpack`` or an ``ext::`` URL's command;
- its settings, given as ``GIT_CONFIG_COUNT`` / ``GIT_CONFIG_KEY_<n>`` / ``GIT_CONFIG_VALUE_<n>``
  (they override every config file, and a key there is never split at an ``=`` as ``-c``
  splits it): ``SAFE_SETTINGS`` (no filesystem monitor, no external diff, no pager), and, with
  :func:`filter_settings`, every filter driver the config names (``filter.<name>.*``, in any
  file git reads, includes followed) emptied: an empty ``clean``, ``smudge`` or ``process`` is
  no filter to git, and ``required=false`` lets a file through unfiltered. Reading the config
  runs nothing. A file a filter converts (Git LFS, say) is then compared as it is on disk.

Git itself is :func:`git_program`, found in ``PATH``'s absolute entries only (never a
workspace's ``./git``: :mod:`dsh.tools.program_path`), and the ``PATH`` it is given is as clean.

The commands' own options do the rest: ``--no-ext-diff`` (a ``diff=<driver>``'s ``command``),
``--no-textconv``, ``--ignore-submodules=dirty`` (git would run ``git status`` in each
submodule, under that submodule's own config).
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from dsh.errors import DshError
from dsh.tools.program_path import find_program
from dsh.tools.secrets import SecretPolicy

KEPT_VARIABLES = frozenset(
    {
        "PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR", "USER", "LOGNAME", "TZ", "LD_LIBRARY_PATH",
        # Windows: where programs, home and temporary files are
        "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "HOMEDRIVE", "HOMEPATH",
        "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "TEMP", "TMP",
    }
)  # fmt: skip
"""Variables git is given besides its own ``GIT_*`` ones: where it is, where the user's config
is, where temporary files go."""
FIXED_VARIABLES = {
    "GIT_PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_NO_LAZY_FETCH": "1",
    "LC_ALL": "C",
}
SAFE_SETTINGS = (("core.fsmonitor", "false"), ("diff.external", ""), ("core.pager", "cat"))
FILTER_OFF = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))


class GitConfigError(DshError):
    """Git could not read the repository's config (the message says why, in one line)."""


def git_program() -> str:
    """The ``git`` dsh runs: found on PATH's absolute entries only
    (:func:`~dsh.tools.program_path.find_program`), never a workspace's ``./git``. Raises
    ``FileNotFoundError`` when there is none."""
    found = find_program("git")
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "no git on PATH", "git")
    return found


def git_environment(
    environ: Mapping[str, str] | None = None, settings: Iterable[tuple[str, str]] = ()
) -> dict[str, str]:
    """The environment git runs in (module docstring), from ``environ`` (default
    ``os.environ``), with ``SAFE_SETTINGS`` and ``settings`` after any the user's environment
    already gives."""
    scrubbed = SecretPolicy().scrubbed_environment(environ)
    env = {n: v for n, v in scrubbed.items() if n in KEPT_VARIABLES or n.startswith("GIT_")}
    env.update(FIXED_VARIABLES)
    return _with_settings(env, [*SAFE_SETTINGS, *settings])


def filter_settings(
    workspace: Path, env: Mapping[str, str], *, timeout: float
) -> list[tuple[str, str]]:
    """``settings`` for :func:`git_environment` that empty every filter driver named in the
    config git reads in ``workspace`` with ``env``. Raises ``GitConfigError`` when git cannot
    read that config, ``OSError`` without git, ``subprocess.TimeoutExpired`` past
    ``timeout``."""
    done = subprocess.run(
        [git_program(), "-C", str(workspace), "config", "--includes", "-z", "--get-regexp",
         r"^filter\."],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False,
        env=dict(env),
    )  # fmt: skip
    if done.returncode == 1:  # no filter.* key at all
        return []
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitConfigError(lines[-1] if lines else f"git config: exit status {done.returncode}")
    names: list[str] = []
    for entry in done.stdout.split(b"\0"):
        key = os.fsdecode(entry.partition(b"\n")[0])  # filter.<name>.<key>, the name as is
        name, dot, _ = key.partition(".")[2].rpartition(".")
        if dot and name not in names:
            names.append(name)
    return [(f"filter.{name}.{key}", value) for name in names for key, value in FILTER_OFF]


def run_git(
    where: Path, *args: str, timeout: float, filters_off: bool = True
) -> subprocess.CompletedProcess[bytes]:
    """``git args`` run in ``where`` as the module docstring says, its output captured; with
    ``filters_off``, every filter driver emptied first. Raises ``OSError`` (no git, no such
    directory), ``subprocess.TimeoutExpired`` and ``GitConfigError``."""
    env = git_environment()
    if filters_off:
        env = git_environment(settings=filter_settings(where, env, timeout=timeout))
    return subprocess.run(
        [git_program(), "-C", str(where), *args],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False, env=env,
    )  # fmt: skip


def _with_settings(env: dict[str, str], settings: list[tuple[str, str]]) -> dict[str, str]:
    """``env`` with ``settings`` appended to its ``GIT_CONFIG_COUNT`` ones (a count that is
    not a number is replaced)."""
    try:
        count = max(0, int(env.get("GIT_CONFIG_COUNT", "0")))
    except ValueError:
        count = 0
    for key, value in settings:
        env[f"GIT_CONFIG_KEY_{count}"] = key
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)
    return env
