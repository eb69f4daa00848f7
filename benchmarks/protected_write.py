"""What deciding whether a file write is protected costs per write, now that the other hook
managers' configs and package.json's hook keys count, against the decision before them.

``protected_write`` (``dsh.tools.protected``, run before every ``write_file``/``edit_file``) in
two ways, in the same run on the same workspace:

- *before* (the baseline, the earlier decision written out here from the module's own parts):
  the resolved path's names against ``.dsh``/``.git``/``.husky``/``.pre-commit-config.yaml``,
  dsh's home, and git's hooks directory (``git rev-parse``, one process per write);
- *now*: the same, plus the path as given, the workspace's top-level symlinks (one listing of
  its top level per write), the hook managers' names, and for a ``package.json`` the file read
  and both texts parsed and their hook keys compared.

The workspace is a git repository with ``--entries`` files at its top level, a 3 KB
package.json with husky and lint-staged set up, and a ``--big-kb`` one in ``big/``. The calls:
an ordinary ``src/app.py`` write, a dependency edit of each package.json (not protected), a
``lint-staged`` edit (protected now), and a ``lefthook.yml`` write (protected now). Each is the
best of ``--runs`` calls, in microseconds, and the ratio now / before; for scale, what
``edit_file`` itself takes for the big file's edit; then the same without git on ``PATH`` (no
process per write: the new steps' own share shows).

Run: ``uv run python benchmarks/protected_write.py [--runs N] [--entries N] [--big-kb N]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import dsh.tools.files as files
from _timing import best_of
from dsh.errors import ToolError
from dsh.tools import protected
from dsh.tools.base import Tool
from dsh.tools.registry import default_tools
from dsh.tools.workspace import display_path, resolve_in_workspace

TOOLS = {tool.name: tool for tool in default_tools()}
BEFORE_NAMES = {".dsh": "dsh", ".git": "git", ".husky": "git hooks"}
BEFORE_NAMES[".pre-commit-config.yaml"] = "git hooks"


def decided_before(tool: Tool, args: dict[str, Any], workspace: Path) -> tuple[str, str] | None:
    """The decision before the hook managers counted: (path, owner) or None."""
    if tool.kind != "write" or not isinstance(args.get("path"), str):
        return None
    try:
        resolved = resolve_in_workspace(args["path"], workspace)
    except ToolError:
        return None
    root = workspace.resolve()
    shown = display_path(resolved, root)
    for name in resolved.relative_to(root).parts:
        owner = BEFORE_NAMES.get(protected._compared(name))
        if owner is not None:
            return shown, owner
    home = protected._resolved_home()
    if home is not None and home.is_relative_to(root) and resolved.is_relative_to(home):
        return shown, "dsh"
    if protected._run_by_git_as_a_hook(resolved, root):
        return shown, "git hooks"
    return None


def package(extra_kb: int) -> str:
    """A package.json with husky v4 and lint-staged set up, padded with dependencies."""
    dependencies = {f"dep-{n:05d}": f"^{n % 9}.{n % 7}.0" for n in range(max(1, extra_kb * 40))}
    body = {
        "name": "web",
        "scripts": {"test": "vitest", "lint": "eslint ."},
        "dependencies": dependencies,
        "devDependencies": {"husky": "^4.3.8", "lint-staged": "^15.0.0"},
        "husky": {"hooks": {"pre-commit": "lint-staged"}},
        "lint-staged": {"*.js": ["eslint --fix"], "*.css": "stylelint --fix"},
    }
    return json.dumps(body, indent=2) + "\n"


def build(root: Path, entries: int, big_kb: int) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    for n in range(entries):
        (root / f"file-{n:05d}.txt").write_text("x\n")
    (root / "package.json").write_text(package(2))
    (root / "big").mkdir()
    (root / "big" / "package.json").write_text(package(big_kb))


CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("ordinary write", "write_file", {"path": "src/app.py", "content": "print(1)\n"}),
    ("package.json dep edit", "edit_file",
     {"path": "package.json", "old": '"dep-00001": "^1.1.0"', "new": '"dep-00001": "^2.0.0"'}),
    ("big package.json dep edit", "edit_file",
     {"path": "big/package.json", "old": '"dep-00001": "^1.1.0"', "new": '"dep-00001": "^2"'}),
    ("package.json lint-staged edit", "edit_file",
     {"path": "package.json", "old": '"eslint --fix"', "new": '"sh x"'}),
    ("lefthook.yml write", "write_file", {"path": "lefthook.yml", "content": "pre-commit: {}\n"}),
]  # fmt: skip


def measure(root: Path, runs: int) -> None:
    print(f"  {'call':32} {'before µs':>10} {'now µs':>10} {'now/before':>11}  decided now")
    for label, tool_name, args in CALLS:
        tool = TOOLS[tool_name]
        before = best_of(runs, lambda: decided_before(tool, args, root))  # noqa: B023
        now = best_of(runs, lambda: protected.protected_write(tool, args, root))  # noqa: B023
        found = protected.protected_write(tool, args, root)
        decided = "not protected" if found is None else found.owner
        print(
            f"  {label:32} {before * 1e6:10.1f} {now * 1e6:10.1f} {now / before:10.2f}x  {decided}"
        )


def edit_itself(root: Path) -> float:
    """The best of 10 runs of edit_file's own work (read, edit, atomic write, diff) on the big
    package.json, back and forth."""
    edits = [
        ('"dep-00001": "^1.1.0"', '"dep-00001": "^2"'),
        ('"dep-00001": "^2"', '"dep-00001": "^1.1.0"'),
    ]
    done = iter(edits * 10)

    def one() -> None:
        old, new = next(done)
        files._edit("big/package.json", old, new, root)

    return best_of(10, one)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--big-kb", type=int, default=200)
    args = parser.parse_args()
    os.environ.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "ws"
        root.mkdir()
        build(root, args.entries, args.big_kb)
        print(
            f"a git repository, {args.entries} files at its top level, package.json "
            f"{(root / 'package.json').stat().st_size // 1024} KB, big/package.json "
            f"{(root / 'big' / 'package.json').stat().st_size // 1024} KB; best of {args.runs}"
        )
        measure(root, args.runs)
        print(
            f"  for scale, edit_file's own dependency edit of big/package.json: "
            f"{edit_itself(root) * 1e3:.1f} ms"
        )
        path = os.environ["PATH"]
        os.environ["PATH"] = str(Path(tmp) / "no-programs-here")
        try:
            print("the same without git on PATH (no process per write)")
            measure(root, args.runs)
        finally:
            os.environ["PATH"] = path


if __name__ == "__main__":
    main()
