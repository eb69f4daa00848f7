"""Every package ``src/dsh`` imports is one ``pip install dsh`` brings: a runtime dependency in
``pyproject.toml``, or an optional extra's (matplotlib, mcp) imported only where that feature
runs. The dev group is not a user's: ``httpx`` was once only there, and every command that
builds a route failed with ``No module named 'httpx'`` outside the checkout's test setup."""

from __future__ import annotations

import ast
import functools
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "dsh"
DATA = SRC / "demo" / "workspace"
"""The demo's throwaway project: files dsh copies, not code it imports."""


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    return {Requirement(r).name.lower().replace("_", "-") for r in requirements}


def _with_requirements(names: set[str]) -> set[str]:
    """``names`` and every distribution they require, installed ones, transitively (an extra's
    own dependencies come with it)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            needs = requires(name) or []
        except PackageNotFoundError:
            continue
        for need in needs:
            requirement = Requirement(need)
            if requirement.marker is None or "extra" not in str(requirement.marker):
                todo.append(requirement.name.lower().replace("_", "-"))
    return seen


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(top-level module, imported at module level) of each import in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        eager = id(node) in top_level or _in_type_checking(tree, node) is False
        found.extend((module.split(".")[0], eager) for module in modules)
    return found


def _in_type_checking(tree: ast.Module, node: ast.AST) -> bool | None:
    """True for an import under ``if TYPE_CHECKING:`` at module level (never run), False for
    one under another module-level ``if`` or ``try`` (run on import), None otherwise."""
    for statement in tree.body:
        if isinstance(statement, (ast.If, ast.Try)) and any(
            child is node for child in ast.walk(statement)
        ):
            test = getattr(statement, "test", None)
            return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
    return None


@functools.cache
def _installed() -> dict[str, list[str]]:
    return packages_distributions()


def _distributions(module: str) -> set[str]:
    return {d.lower().replace("_", "-") for d in _installed().get(module, [])}


def test_every_third_party_import_is_a_runtime_dependency_or_a_lazy_extra() -> None:
    project = _project()
    runtime = _names(project["dependencies"])
    extras = _with_requirements(
        set().union(*(_names(r) for r in project["optional-dependencies"].values()))
    )
    stdlib = sys.stdlib_module_names
    wrong: list[str] = []
    for path in sorted(p for p in SRC.rglob("*.py") if DATA not in p.parents):
        for module, eager in _imports(path):
            if module in stdlib or module in ("dsh", "__future__"):
                continue
            owners = _distributions(module)
            assert owners, f"{path.relative_to(ROOT)} imports {module}, which nothing installs"
            if owners & runtime:
                continue
            if owners & extras and not eager:
                continue
            why = "an extra's, imported at module level" if owners & extras else "not declared"
            wrong.append(f"{path.relative_to(ROOT)}: {module} ({', '.join(sorted(owners))}): {why}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("module", ["httpx", "yaml", "snowballstemmer"])
def test_the_packages_once_missing_or_easily_missed_are_runtime_dependencies(module: str) -> None:
    assert _distributions(module) & _names(_project()["dependencies"])
