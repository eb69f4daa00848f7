"""What protecting the files git's config names as programs (``core.fsmonitor = ./x``, a
``textconv``, a filter, an ``alias`` with ``!``: ``dsh.tools.git_programs``), and what routes
files through them or puts hooks in new repositories (a ``.gitattributes`` while a driver is
configured, ``init.templateDir``: ``dsh.tools.git_attributes``), adds to deciding whether a
write is protected, per write.

No git process is added: the settings come from the ``git config --list --show-origin
--includes`` listing the check already runs at each write (``dsh.tools.git_hooks``), and the
top level from one more option of its ``rev-parse``. What is added is reading the listing's
values and resolving the paths they name. ``protected_write`` is timed two ways in the same run
on the same workspace:

- *before* (the baseline): the same call with those steps left out (``named_programs`` and
  ``git_attributes``' readers replaced by ones that name nothing; the extra ``rev-parse``
  option stays, as it costs no process);
- *now*: as dsh runs it.

The workspace is a git repository whose config has what a real one often has: Git LFS's three
filter settings, a ``textconv``, an editor, a pager, ``--aliases`` aliases (every third a ``!``
command naming a script), and a ``core.fsmonitor`` script; the calls are an ordinary write,
and the writes of the fsmonitor script and of ``.gitattributes`` (protected now). Each figure is
the best of ``--runs`` calls, the two ways taking turns, in microseconds, with the ratio now /
before; then what reading the settings alone costs, the added steps measured without git's
processes around them, and their share of the check before. Git LFS's filter runs git-lfs,
which runs nothing it is given, so it defines no driver: the ``.gitattributes`` write is
protected there by the ``textconv``; a second repository whose config has LFS's settings alone
shows that write's check deciding it is an ordinary file.

Run: ``uv run python benchmarks/protected_git_programs.py [--runs N] [--aliases N]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _timing import best_of
from dsh.tools import git_hooks
from dsh.tools.git_attributes import attributes_files, drivers, template_dirs
from dsh.tools.git_programs import named_programs
from dsh.tools.protected import protected_write
from dsh.tools.registry import default_tools

WRITE_FILE = next(tool for tool in default_tools() if tool.name == "write_file")
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("ordinary write", {"path": "src/app.py", "content": "print(1)\n"}),
    ("core.fsmonitor's script", {"path": "tools/fsmonitor.sh", "content": "#!/bin/sh\n"}),
    (".gitattributes (a textconv)", {"path": ".gitattributes", "content": "* text\n"}),
]
LFS_SETTINGS = [
    ("filter.lfs.clean", "git-lfs clean -- %f"),
    ("filter.lfs.smudge", "git-lfs smudge -- %f"),
    ("filter.lfs.process", "git-lfs filter-process"),
    ("filter.lfs.required", "true"),
]
"""What ``git lfs install`` writes."""


def build(root: Path, aliases: int) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    settings = [
        *LFS_SETTINGS,
        ("diff.pdf.textconv", "sh tools/pdf2txt.sh"),
        ("core.editor", "code --wait"),
        ("core.pager", "less -FRX"),
        ("core.fsmonitor", "tools/fsmonitor.sh"),
    ]
    for n in range(aliases):
        value = f"!sh scripts/alias-{n}.sh" if n % 3 == 0 else f"log --oneline -{n}"
        settings.append((f"alias.a{n}", value))
    for key, value in settings:
        subprocess.run(["git", "-C", str(root), "config", "--add", key, value], check=True)


ATTRS = (git_hooks.drivers, git_hooks.attributes_files, git_hooks.template_dirs)


def _stubbed() -> None:
    """The check as it was before it read programs, drivers, attributes files and templates."""
    git_hooks.named_programs = lambda entries, bases: ()  # type: ignore[assignment]
    git_hooks.drivers = lambda entries: ()  # type: ignore[assignment]
    git_hooks.attributes_files = lambda entries, bases, environ: ()  # type: ignore[assignment]
    git_hooks.template_dirs = lambda entries, bases, environ: ()  # type: ignore[assignment]


def measure(root: Path, runs: int) -> float:
    """Each call timed both ways in turn, ``runs`` times: load on a shared machine falls on
    both alike; the best of each."""
    print(f"  {'call':28} {'before µs':>10} {'now µs':>10} {'now/before':>11}  decided now")
    real = git_hooks.named_programs
    baseline = 0.0
    for label, args in CALLS:
        before = now = float("inf")
        for _ in range(runs):
            _stubbed()
            try:
                took = best_of(1, lambda: protected_write(WRITE_FILE, args, root))  # noqa: B023
                before = min(before, took)
            finally:
                git_hooks.named_programs = real
                git_hooks.drivers, git_hooks.attributes_files, git_hooks.template_dirs = ATTRS
            now = min(now, best_of(1, lambda: protected_write(WRITE_FILE, args, root)))  # noqa: B023
        found = protected_write(WRITE_FILE, args, root)
        decided = "not protected" if found is None else found.owner
        print(
            f"  {label:28} {before * 1e6:10.0f} {now * 1e6:10.0f} {now / before:10.3f}x  {decided}"
        )
        baseline = baseline or before
    return baseline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--aliases", type=int, default=30)
    args = parser.parse_args()
    os.environ.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "ws"
        root.mkdir()
        build(root, args.aliases)
        _, entries = git_hooks._listed_config(root, root / ".git")
        print(
            f"a git repository whose config lists {len(entries)} settings "
            f"({args.aliases} aliases); best of {args.runs}"
        )
        before = measure(root, args.runs)
        alone = best_of(args.runs * 10, lambda: named_programs(entries, [root]))
        print(
            f"  reading the settings and resolving what they name alone: {alone * 1e6:.0f} µs, "
            f"{alone / before:.1%} of an ordinary write's check before (the git processes are "
            "the rest, and their spread on a loaded machine is wider than this)"
        )
        environ = os.environ

        def attributes() -> None:
            drivers(entries)
            attributes_files(entries, [root], environ)
            template_dirs(entries, [root], environ)

        alone = best_of(args.runs * 10, attributes)
        print(
            f"  the drivers, attributes files and template directories alone: {alone * 1e6:.0f} "
            f"µs, {alone / before:.1%} of it"
        )
        lfs = Path(tmp).resolve() / "lfs"
        subprocess.run(["git", "init", "-q", str(lfs)], check=True)
        for key, value in LFS_SETTINGS:
            subprocess.run(["git", "-C", str(lfs), "config", key, value], check=True)
        write = {"path": ".gitattributes", "content": "*.psd filter=lfs diff=lfs merge=lfs -text\n"}
        took = best_of(args.runs, lambda: protected_write(WRITE_FILE, write, lfs))
        found = protected_write(WRITE_FILE, write, lfs)
        decided = "not protected" if found is None else found.owner
        print(f"  .gitattributes with Git LFS alone: {took * 1e6:.0f} µs, {decided}")


if __name__ == "__main__":
    main()
