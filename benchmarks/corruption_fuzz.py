"""Corruption fuzzer: mutate a real JSONL session log and see what loading it does.

One session is built through the real API (``log_replay.build``: tool turns and compactions),
then each mutant of its bytes is written over the log and opened read-only with
``Session.open``. Mutations, seeded:

* ``flip``: one bit of one byte anywhere;
* ``truncate``: the file cut at a random offset;
* ``zero-tail``: the last 1-8 KB replaced by NUL bytes (a power loss after the size grew);
* ``zero-page``: one 4 KB page among the last 32 KB replaced by NUL bytes, later pages intact
  (a power loss that kept later blocks but not that one);
* ``json``: one event line parsed and changed — an int leaf moved, a string leaf rewritten, a key
  dropped or added, the ``type`` or ``seq`` replaced, the line deleted, duplicated or swapped.

Each outcome is one of: ``refused`` (a one-line ``DshError``), ``loaded-unchanged`` (every
event that loaded equals the original event at its seq — a dropped torn tail is allowed),
``loaded-changed`` (something loaded with different content), ``crashed`` (any other exception:
a bug). Every refused mutant is then given to ``dsh sessions repair``'s planner
(``plan_salvage``); its kept prefix is loaded again and classified the same way.

Run: ``uv run python benchmarks/corruption_fuzz.py [--per-kind N] [--seed S] [--json]``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from dsh.errors import DshError
from dsh.events import EVENT_CLASS_BY_TYPE, encode_event
from dsh.store import JsonlStore
from dsh.store.base import encode_header
from dsh.store.salvage import plan_salvage
from dsh.surface import Session
from log_replay import build  # type: ignore[import-not-found]

KINDS = ("flip", "truncate", "zero-tail", "zero-page", "json")
TYPES = sorted(EVENT_CLASS_BY_TYPE)


def leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in leaves(v, (*path, k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in leaves(v, (*path, i))]
    return [(path, value)]


def containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if isinstance(value, dict) and value else []
    if isinstance(value, dict):
        for k, v in value.items():
            found += containers(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += containers(v, (*path, i))
    return found


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def json_mutant(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = data.split(b"\n")[:-1]
    index = rng.randrange(1, len(lines))
    event = json.loads(lines[index])
    how = rng.choice(
        ["int", "string", "drop-key", "add-key", "type", "seq", "delete", "dup", "swap"]
    )
    if how in ("int", "string"):
        wanted = int if how == "int" else str
        candidates = [
            (p, v) for p, v in leaves(event) if isinstance(v, wanted) and not isinstance(v, bool)
        ]
        if not candidates:
            how = "add-key"
        else:
            path, value = rng.choice(candidates)
            new = (
                value + rng.choice([-1, 1, 7])
                if how == "int"
                else rng.choice(["", "x", value[::-1] + "!"])
            )
            at(event, path[:-1])[path[-1]] = new
    if how in ("drop-key", "add-key"):
        path = rng.choice(containers(event))
        target = at(event, path)
        if how == "drop-key":
            target.pop(rng.choice(list(target)))
        else:
            target["fuzz"] = 1
    elif how == "type":
        event["type"] = rng.choice(TYPES)
    elif how == "seq":
        event["seq"] = rng.choice([event["seq"] + 1, event["seq"] - 1, 0, -1, "1", None])
    if how == "delete":
        del lines[index]
    elif how == "dup":
        lines.insert(index, lines[index])
    elif how == "swap" and index + 1 < len(lines):
        lines[index], lines[index + 1] = lines[index + 1], lines[index]
    elif how not in ("delete", "dup", "swap"):
        lines[index] = json.dumps(event, separators=(",", ":")).encode()
    return b"\n".join(lines) + b"\n", how


def mutate(kind: str, data: bytes, rng: random.Random) -> tuple[bytes, str]:
    if kind == "flip":
        at_byte = rng.randrange(len(data))
        flipped = bytes([data[at_byte] ^ (1 << rng.randrange(8))])
        return data[:at_byte] + flipped + data[at_byte + 1 :], "flip"
    if kind == "truncate":
        return data[: rng.randrange(len(data))], "truncate"
    if kind == "zero-tail":
        size = min(len(data) - 1, rng.randint(1024, 8192))
        return data[: len(data) - size] + b"\x00" * size, "zero-tail"
    if kind == "zero-page":
        last_page = (len(data) - 1) // 4096
        page = rng.randint(max(1, last_page - 7), last_page)
        start, end = page * 4096, min(len(data), page * 4096 + 4096)
        return data[:start] + b"\x00" * (end - start) + data[end:], "zero-page"
    return json_mutant(data, rng)


def classify(store: JsonlStore, session_id: str, data: bytes, original: list[bytes]) -> str:
    store.log_path(session_id).write_bytes(data)
    try:
        with Session.open(store, session_id) as session:
            loaded = [encode_header(session.header)] + [encode_event(e) for e in session.events]
    except DshError:
        return "refused"
    except Exception as exc:  # a bug: loading must refuse with a DshError, never crash
        print(f"  crashed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return "crashed"
    return "loaded-unchanged" if loaded == original[: len(loaded)] else "loaded-changed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=400)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--events", type=int, default=240)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        session, _ = build(home, options.events, options.seed)
        session.close()
        store = JsonlStore(home)
        path = store.log_path(session.id)
        pristine = path.read_bytes()
        original = pristine.split(b"\n")[:-1]
        outcomes: dict[str, Counter[str]] = {kind: Counter() for kind in KINDS}
        repaired: Counter[str] = Counter()
        for kind in KINDS:
            for _ in range(options.per_kind):
                data, _how = mutate(kind, pristine, rng)
                outcome = classify(store, session.id, data, original)
                outcomes[kind][outcome] += 1
                if outcome != "refused":
                    continue
                try:
                    plan = plan_salvage(data, session_id=session.id, path=path)
                except DshError:
                    repaired["header unreadable (nothing to keep)"] += 1
                    continue
                kept = b"".join(line + b"\n" for line in data.split(b"\n")[: plan.kept_lines])
                after = classify(store, session.id, kept, original)
                repaired[f"salvaged: {after}"] += 1
        path.write_bytes(pristine)
    total: Counter[str] = sum(outcomes.values(), Counter())
    if options.json:
        print(json.dumps({"outcomes": outcomes, "total": total, "repair": repaired}, indent=2))
        return
    print(f"log: {len(original)} lines, {len(pristine)} bytes; seed {options.seed}")
    names = ("refused", "loaded-unchanged", "loaded-changed", "crashed")
    print(f"{'mutation':<10} " + " ".join(f"{n:>17}" for n in names))
    for kind in (*KINDS, "total"):
        counts = total if kind == "total" else outcomes[kind]
        print(f"{kind:<10} " + " ".join(f"{counts[n]:>17}" for n in names))
    print(f"repair of the {total['refused']} refused mutants:")
    for name, count in sorted(repaired.items()):
        print(f"  {name}: {count}")


if __name__ == "__main__":
    main()
