"""What deciding whether a file write is protected costs per write, now that git's own
configuration outside ``.git`` counts (the files its config listing names, git directories of
any name, the user's config files), against the decision before it.

``protected_write`` (``dsh.tools.protected``, run before every ``write_file``/``edit_file``) in
two ways, in the same run on the same workspace:

- *before* (the baseline, the earlier decision written out here from the module's own parts):
  the names on the way to the file (``.dsh``, ``.git``, the hook managers', ``.vscode``,
  ``.envrc``), dsh's home, the hooks directory (``git rev-parse --git-path hooks``, one process
  per write), and a package.json's hook keys;
- *now*: the same, plus the editor and mise names, one more git process per write
  (``git config --list --show-origin --includes``; the ``rev-parse`` names the git directories
  too), the user's config files, and a look for a git directory among the file's parents.

The workspace is a git repository whose config includes ``../shared.gitconfig``, with
``--entries`` files at its top level, a 3 KB package.json with husky and lint-staged set up, and
a ``--big-kb`` one in ``big/``. The calls: an ordinary ``src/app.py`` write, a dependency edit of
each package.json (not protected), a ``lint-staged`` edit, a ``lefthook.yml`` write (protected
by name, no git run), and a write of the included ``shared.gitconfig`` (protected now). Each is
the best of ``--runs`` calls, in microseconds, and the ratio now / before; for scale, what
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
from dsh.tools.git_hooks import hooks_dir, runs_as_hook
from dsh.tools.hook_configs import MANAGED_NAMES, PACKAGE_JSON, package_key_change
from dsh.tools.registry import default_tools
from dsh.tools.workspace import display_path, resolve_in_workspace

TOOLS = {tool.name: tool for tool in default_tools()}
BEFORE_NAMES = {".dsh": "dsh", ".git": "git", ".husky": "git hooks", ".vscode": "VS Code"}
BEFORE_NAMES.update({".pre-commit-config.yaml": "git hooks", ".envrc": "direnv"})
BEFORE_NAMES.update(MANAGED_NAMES)


def decided_before(tool: Tool, args: dict[str, Any], workspace: Path) -> tuple[str, str] | None:
    """The decision before git's configuration outside ``.git`` counted: (path, owner) or
    None."""
    if tool.kind != "write" or not isinstance(args.get("path"), str):
        return None
    try:
        resolved = resolve_in_workspace(args["path"], workspace)
    except ToolError:
        return None
    root = workspace.resolve()
    shown = display_path(resolved, root)
    for parts, _ in protected._routes(args["path"], resolved, root):
        for name in parts:
            owner = BEFORE_NAMES.get(name)
            if owner is not None:
                return shown, owner
    home = protected._resolved_home()
    if home is not None and home.is_relative_to(root) and resolved.is_relative_to(home):
        return shown, "dsh"
    hooks = hooks_dir(root)
    if hooks is not None and hooks.is_relative_to(root) and resolved.is_relative_to(hooks):
        return shown, "git hooks"
    if hooks is not None and hooks == root and runs_as_hook(resolved.name):
        return shown, "git hooks"
    if resolved.name == PACKAGE_JSON:
        change = package_key_change(tool.name, args, resolved)
        if change is not None:
            return shown, str(change.key)
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
    (root / "shared.gitconfig").write_text("[diff]\n\trenames = true\n")
    subprocess.run(
        ["git", "-C", str(root), "config", "include.path", "../shared.gitconfig"], check=True
    )


CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("ordinary write", "write_file", {"path": "src/app.py", "content": "print(1)\n"}),
    ("package.json dep edit", "edit_file",
     {"path": "package.json", "old": '"dep-00001": "^1.1.0"', "new": '"dep-00001": "^2.0.0"'}),
    ("big package.json dep edit", "edit_file",
     {"path": "big/package.json", "old": '"dep-00001": "^1.1.0"', "new": '"dep-00001": "^2"'}),
    ("package.json lint-staged edit", "edit_file",
     {"path": "package.json", "old": '"eslint --fix"', "new": '"sh x"'}),
    ("lefthook.yml write", "write_file", {"path": "lefthook.yml", "content": "pre-commit: {}\n"}),
    ("included shared.gitconfig write", "write_file",
     {"path": "shared.gitconfig", "content": "[core]\n"}),
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
