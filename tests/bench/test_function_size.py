"""No function in ``dsh.bench`` is longer than 60 lines (its ``def`` line to its last line,
nested functions counted in their parent too), so the scorers and the report stay readable."""

from __future__ import annotations

import ast
from pathlib import Path

import dsh.bench

LIMIT = 60
BENCH = Path(dsh.bench.__file__).parent


def function_lengths(source: str) -> dict[str, int]:
    """Every function and method of a module by qualified name: its length in lines."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}."
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                lengths[name[:-1]] = (child.end_lineno or child.lineno) - child.lineno + 1
            visit(child, name)

    visit(ast.parse(source), "")
    return lengths


def test_the_measure_counts_a_function_from_its_def_to_its_last_line() -> None:
    source = (
        "class A:\n    def f(self):\n        x = 1\n\n        return x\n\n\n"
        "async def g():\n    pass\n"
    )
    assert function_lengths(source) == {"A.f": 4, "g": 2}


def test_no_bench_function_is_over_60_lines() -> None:
    too_long = {
        f"{path.relative_to(BENCH)}:{name}": length
        for path in sorted(BENCH.rglob("*.py"))
        for name, length in function_lengths(path.read_text(encoding="utf-8")).items()
        if length > LIMIT
    }
    assert not too_long, f"functions over {LIMIT} lines: {too_long}"
