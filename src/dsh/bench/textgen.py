"""Realistic, deterministic text for generated scenarios: Python modules and their tests, pytest
logs, stack traces, unified diffs and application logs.

Every function is a pure function of its arguments and the ``random.Random`` it is handed, so a
scenario generated twice from the same seed is byte-identical. Generic text never contains the
planted anchors: numbers, ids and names are drawn from ranges and vocabularies that the scenario
files keep clear of (``check_clean`` in the generator enforces it).
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Sequence

VERBS = (
    "parse",
    "load",
    "build",
    "merge",
    "flush",
    "render",
    "validate",
    "normalise",
    "resolve",
    "encode",
    "decode",
    "split",
    "collect",
    "schedule",
    "retry",
    "fetch",
    "store",
    "index",
    "compact",
    "apply",
    "emit",
    "scan",
    "format",
    "check",
)
NOUNS = (
    "header",
    "batch",
    "row",
    "record",
    "chunk",
    "manifest",
    "token",
    "payload",
    "window",
    "cursor",
    "snapshot",
    "ledger",
    "entry",
    "schema",
    "column",
    "bucket",
    "segment",
    "frame",
    "request",
    "response",
    "policy",
    "target",
    "offset",
    "digest",
)
MODULES = (
    "core",
    "parser",
    "codec",
    "storage",
    "retry",
    "settings",
    "cli",
    "models",
    "schema",
    "cache",
    "transport",
    "auth",
    "metrics",
    "queue",
    "worker",
    "scheduler",
    "export",
    "report",
    "util",
    "validation",
    "ledger",
    "sync",
    "planner",
    "registry",
)
TYPES = ("int", "str", "bytes", "dict[str, int]", "list[str]", "float", "bool")
LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARNING")
GENERIC_ERRORS = (
    "AssertionError: assert {a} == {b}",
    "KeyError: '{noun}'",
    "ValueError: invalid {noun} length {a}",
    "TypeError: {verb}_{noun}() missing 1 required positional argument: '{noun}'",
    "IndexError: list index out of range",
    "AttributeError: 'NoneType' object has no attribute '{noun}'",
)


def ident(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"


def _stamp(rng: random.Random, second: int) -> str:
    day = rng.randint(1, 28)
    return (
        f"2025-03-{day:02d}T{(second // 3600) % 24:02d}:{(second // 60) % 60:02d}:{second % 60:02d}"
    )


# ---- source files ----------------------------------------------------------------------------


def python_module(rng: random.Random, package: str, module: str, functions: int) -> str:
    """A module of ``functions`` small typed functions with docstrings and a few branches."""
    lines = [
        f'"""{package}.{module}: {rng.choice(VERBS)} and {rng.choice(VERBS)} '
        f'{rng.choice(NOUNS)}s."""',
        "",
    ]
    lines += ["from __future__ import annotations", "", "import logging", ""]
    lines += [f'log = logging.getLogger("{package}.{module}")', ""]
    names: list[str] = []
    for _ in range(functions):
        name = ident(rng)
        while name in names:
            name = ident(rng)
        names.append(name)
        arg, kind = rng.choice(NOUNS), rng.choice(TYPES)
        lines += ["", f"def {name}({arg}: {kind}, *, limit: int = {rng.randint(2, 64)}) -> {kind}:"]
        lines.append(
            f'    """{name.replace("_", " ").capitalize()} for one {arg}; see {module}.md."""'
        )
        for _ in range(rng.randint(2, 7)):
            other = rng.choice(NOUNS)
            form = rng.randrange(5)
            if form == 0:
                lines += [
                    f"    if not {arg}:",
                    f'        log.debug("empty {arg} in {name}")',
                    f"        return {arg}",
                ]
            elif form == 1:
                call = f"{rng.choice(VERBS)}_{other}({arg}, limit=limit)"
                lines.append(f"    {other} = {call}  # type: ignore[name-defined]")
            elif form == 2:
                bound = rng.randint(3, 40)
                lines += [f"    for _ in range(min(limit, {bound})):", f"        {arg} = {arg}"]
            elif form == 3:
                lines.append(f'    log.info("{name}: %s {other}s", limit)')
            else:
                lines += [
                    "    try:",
                    f"        {arg} = type({arg})({arg})",
                    "    except (TypeError, ValueError):",
                    f'        log.warning("cannot coerce {arg}")',
                ]
        lines.append(f"    return {arg}")
    lines.append("")
    return "\n".join(lines)


def module_functions(text: str) -> list[str]:
    return [line[4 : line.index("(")] for line in text.splitlines() if line.startswith("def ")]


def test_module(rng: random.Random, package: str, module: str, functions: Sequence[str]) -> str:
    lines = ['"""Tests for ' + f'{package}.{module}."""', "", "import pytest", ""]
    lines.append(f"from {package}.{module} import " + ", ".join(functions[:6]))
    for name in functions[:6]:
        for case in range(rng.randint(1, 3)):
            value = rng.randint(0, 99)
            lines += [
                "",
                "",
                f"def test_{name}_{case}():",
                f"    assert {name}({value}) == {value}",
            ]
    lines += [
        "",
        "",
        "@pytest.mark.parametrize('limit', [1, 2, 8])",
        "def test_limits(limit):",
        f"    assert {functions[0]}(limit, limit=limit) == limit",
        "",
    ]
    return "\n".join(lines)


# ---- logs and traces -------------------------------------------------------------------------


def pytest_log(
    rng: random.Random,
    package: str,
    modules: Sequence[str],
    *,
    tests: int,
    failure: str | None = None,
) -> str:
    """A ``pytest -v`` run: collected items, PASSED/FAILED lines, one failure section when
    ``failure`` (the ``E`` line) is given, and the short summary."""
    ids = []
    for _ in range(tests):
        module = rng.choice(modules)
        ids.append(f"tests/test_{module}.py::test_{ident(rng)}_{rng.randint(0, 9)}")
    failed = rng.randrange(len(ids)) if failure else -1
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.9, pytest-8.3.4, pluggy-1.5.0",
        f"rootdir: /srv/{package}",
        "configfile: pyproject.toml",
        f"collected {len(ids)} items",
        "",
    ]
    for i, test in enumerate(ids):
        pct = (i + 1) * 100 // len(ids)
        lines.append(f"{test} {'FAILED' if i == failed else 'PASSED'} [{pct:3d}%]")
    if failure:
        test = ids[failed]
        module = test.split("::")[0]
        name = test.split("::")[1]
        lines += [
            "",
            "=================================== FAILURES ===================================",
            f"_{'_' * 20} {name} {'_' * 20}",
            "",
            f"    def {name}():",
            f"        {ident(rng)} = {ident(rng)}({rng.randint(1, 99)})",
            f">       assert {ident(rng)}({rng.randint(1, 99)}) == {rng.randint(1, 99)}",
            f"E       {failure}",
            "",
            f"{module}:{rng.randint(10, 200)}: {failure.split(':')[0]}",
            "=========================== short test summary info ============================",
            f"FAILED {test} - {failure[:70]}",
            f"{'=' * 25} 1 failed, {len(ids) - 1} passed in {_seconds(rng)} {'=' * 25}",
        ]
    else:
        lines.append(f"{'=' * 30} {len(ids)} passed in {_seconds(rng)} {'=' * 31}")
    return "\n".join(lines) + "\n"


def traceback_text(
    rng: random.Random, package: str, modules: Sequence[str], final: str | None = None
) -> str:
    """A Python traceback through the package's modules ending in ``final`` (or a generic one)."""
    lines = ["Traceback (most recent call last):"]
    for _ in range(rng.randint(3, 9)):
        module = rng.choice(modules)
        fn = ident(rng)
        lines += [
            f'  File "/srv/{package}/src/{package}/{module}.py", '
            f"line {rng.randint(10, 400)}, in {fn}",
            f"    {ident(rng)} = {fn}({rng.choice(NOUNS)}, limit=limit)",
        ]
    lines.append(final or generic_error(rng))
    return "\n".join(lines) + "\n"


def _seconds(rng: random.Random) -> str:
    return f"{rng.randint(1, 9)}.{rng.randint(10, 99)}s"


def generic_error(rng: random.Random) -> str:
    return rng.choice(GENERIC_ERRORS).format(
        a=rng.randint(0, 99),
        b=rng.randint(100, 199),
        noun=rng.choice(NOUNS),
        verb=rng.choice(VERBS),
    )


def app_log(rng: random.Random, package: str, *, lines: int, extra: str | None = None) -> str:
    """Timestamped service log lines; ``extra`` is inserted once, two thirds of the way in."""
    out = []
    second = rng.randint(0, 80_000)
    at = (lines * 2) // 3
    for i in range(lines):
        second += rng.randint(0, 7)
        if i == at and extra is not None:
            out.append(f"{_stamp(rng, second)} ERROR {package}.{rng.choice(MODULES)} {extra}")
            continue
        level = rng.choice(LEVELS)
        out.append(
            f"{_stamp(rng, second)} {level} {package}.{rng.choice(MODULES)} "
            f"{ident(rng)} {rng.choice(NOUNS)}={rng.randint(0, 4999)} "
            f"elapsed={rng.randint(1, 900)}ms"
        )
    return "\n".join(out) + "\n"


def unified_diff(rng: random.Random, path: str, text: str, *, added: str | None = None) -> str:
    """A ``git diff``-style patch of ``text``: a few changed lines, ``added`` as a new line."""
    before = text.splitlines()
    after = list(before)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(after))
        if after[i].strip():
            after[i] = after[i].rstrip() + f"  # {rng.choice(VERBS)}d"
    if added is not None:
        i = rng.randrange(len(after))
        after.insert(i, f"# {added}")
    body = difflib.unified_diff(before, after, f"a/{path}", f"b/{path}", n=3, lineterm="")
    return f"diff --git a/{path} b/{path}\n" + "\n".join(body) + "\n"


def config_file(rng: random.Random, section: str, entries: Sequence[str]) -> str:
    """A TOML file with ``entries`` (literal ``key = value`` lines) among generic keys."""
    keys = [
        f"{rng.choice(NOUNS)}_{rng.choice(('limit', 'timeout', 'size', 'name'))}" for _ in range(4)
    ]
    lines = [f"[{section}]"]
    for i, key in enumerate(dict.fromkeys(keys)):
        lines.append(
            f'{key} = "{rng.choice(VERBS)}-{i}"'
            if key.endswith("name")
            else f"{key} = {rng.randint(1, 60)}"
        )
    lines.extend(entries)
    lines.append(f'log_level = "{rng.choice(("info", "debug", "warning"))}"')
    return "\n".join(lines) + "\n"
