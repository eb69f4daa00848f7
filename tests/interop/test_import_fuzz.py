"""``dsh sessions import`` of a mutated log: never a traceback, one error line naming the file
and the line, and nothing written on a refusal.

Each example takes a valid fixture, walks to one field of one line (at any depth) and changes
it: a value of another type, a missing key, the value wrapped in a list or an object, the
object in place of its own field. The import must then either succeed or raise a ``DshError``
whose message is one line ``FILE: line N: …`` — and leave the store and ``imports/`` as they
were.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.errors import DshError
from dsh.interop import import_upstream
from dsh.store import JsonlStore

FIXTURES = Path(__file__).parent / "fixtures"
VALID = sorted(p for p in FIXTURES.glob("*.jsonl") if "surface-event" not in p.name)
LINES = {p.name: p.read_text().splitlines() for p in VALID}

REPLACEMENTS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["", "completed", "user", "text", "tool-call", "x" * 3]),
    st.just([]),
    st.just({}),
    st.just([["nested"]]),
    st.just({"kind": ["user"]}),
    st.just([{"type": "text", "text": 1}]),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a field below ``value`` (object keys and list indexes)."""
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            out.append((*prefix, key))
            out.extend(_paths(child, (*prefix, key)))
    return out


@st.composite
def mutated_logs(draw: st.DrawFn) -> tuple[str, int, str]:
    """(fixture name, mutated line number, mutated file text)."""
    name = draw(st.sampled_from(sorted(LINES)))
    lines = list(LINES[name])
    index = draw(st.integers(min_value=0, max_value=len(lines) - 1))
    record = json.loads(lines[index])
    path = draw(st.sampled_from(_paths(record)))
    parent = record
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    how = draw(st.sampled_from(["replace", "delete", "wrap-list", "wrap-object", "self"]))
    if how == "replace":
        parent[last] = draw(REPLACEMENTS)
    elif how == "delete":
        del parent[last]
    elif how == "wrap-list":
        parent[last] = [parent[last]]
    elif how == "wrap-object":
        parent[last] = {"value": parent[last]}
    else:
        parent[last] = json.loads(json.dumps(parent))
    lines[index] = json.dumps(record, separators=(",", ":"))
    return name, index + 1, "\n".join(lines) + "\n"


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else "dir"
        for p in sorted(root.rglob("*"))
    }


@settings(
    max_examples=int(os.environ.get("DSH_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(mutated_logs())
def test_a_mutated_log_imports_or_is_refused_in_one_line(case):
    name, _line, text = case
    with tempfile.TemporaryDirectory() as directory:  # a store of its own for each example
        root = Path(directory)
        log, home = root / name, root / "dsh"
        log.write_text(text)
        JsonlStore(home).create(cwd=str(root)).close()  # a store that already holds a session
        before = _snapshot(home)
        try:
            import_upstream(JsonlStore(home), home, log, cwd=str(root))
        except DshError as exc:
            message = str(exc)
            assert "\n" not in message
            assert re.match(rf"{re.escape(str(log))}: line \d+: \S", message), message
            assert _snapshot(home) == before
