"""Log replay benchmark: build a long JSONL session through the real API, then reload it.

Measures, in one run:

* append throughput of ``Session.append`` with durability on (background fsync at step/end,
  turn/end and compaction/end; the final ``session.sync()`` is inside the clock). Only the
  append calls are timed, not building their payloads. Its baseline is the floor of the JSONL
  contract in the same run: the same stored lines written with one ``os.write`` each and one
  final fsync (``write_floor``);
* the size of the resulting ``session.jsonl``;
* load + fold: ``Session.open(store, id)`` read-only, best of 3;
* the bare decode of the same file (read it, ``msgspec.json.decode`` every line, untyped), best
  of 3, as the baseline, plus ``json.loads`` per line for reference;
* the peak memory of one load in a fresh subprocess: increase of peak RSS (``VmHWM`` from
  /proc/self/status; ``ru_maxrss`` where there is no /proc) over the value just before the load,
  against the file size.

The session: turns of 1-3 steps, assistant messages with 0-3 tool calls, tool/call + tool/result
pairs with 0.5-4 KB results, and 20 compactions, each replacing a tool-balanced run at the head
of the surface with a checkpoint. A missed target is reported, never an error exit.

Run: ``uv run python benchmarks/log_replay.py [--events N] [--seed S] [--dir D] [--json]``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

import dsh.events as E
from _timing import best_of
from dsh.store import JsonlStore
from dsh.surface import Session

COMPACTIONS = 20
TOOLS = ("read_file", "bash", "grep", "edit_file")
WORDS = "the a session log event fold replay def return self value path error ok = ( ) { } : \n"
MODEL = E.ModelSource(provider="bench", model="bench-model")


class Builder:
    """Appends a realistic session; ``elapsed`` sums the time spent inside ``Session.append``."""

    def __init__(self, session: Session, rng: random.Random) -> None:
        self.s, self.rng, self.elapsed, self.ids = session, rng, 0.0, 0
        self.pool = " ".join(rng.choices(WORDS.split(" "), k=40_000))

    def add(self, payload: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        event = self.s.append(payload, **kwargs)
        self.elapsed += time.perf_counter() - start
        return event

    def text(self, low: int, high: int) -> str:
        size = self.rng.randint(low, high)
        at = self.rng.randrange(len(self.pool) - size)
        return self.pool[at : at + size]

    def new_id(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}{self.ids:07d}"

    def message(self, role: Any, content: tuple[Any, ...], source: Any) -> E.Message:
        return E.Message(id=self.new_id(role[0]), role=role, content=content, source=source)

    def turn(self, turn: int) -> None:
        rng = self.rng
        self.add(E.TurnStart(turn=turn))
        steps = rng.randint(1, 3)
        for step in range(1, steps + 1):
            self.add(E.StepStart(turn=turn, step=step))
            if step == 1:
                prompt = (E.TextBlock(text=self.text(20, 400)),)
                self.add(self.message("user", prompt, E.UserSource()))
            calls = tuple(
                E.ToolCallBlock(
                    id=self.new_id("call_"),
                    name=rng.choice(TOOLS),
                    arguments=json.dumps({"path": f"src/mod{rng.randrange(100)}.py"}),
                )
                for _ in range(rng.randint(1, 3) if step < steps else 0)
            )
            reply = self.message("assistant", (E.TextBlock(text=self.text(40, 600)), *calls), MODEL)
            tokens_in, tokens_out = rng.randint(1000, 90_000), rng.randint(9, 900)
            usage = E.Usage(input_tokens=tokens_in, output_tokens=tokens_out)
            self.add(E.AssistantMessage(turn=turn, step=step, message=reply, usage=usage))
            for c in calls:
                args = {"call_id": c.id, "name": c.name, "arguments": c.arguments}
                self.add(E.ToolCall(turn=turn, step=step, **args))
                text = (E.TextBlock(text=self.text(512, 4096)),)
                block = E.ToolResultBlock(tool_call_id=c.id, content=text)
                result = self.message("tool", (block,), E.ToolSource(call_id=c.id))
                self.add(E.ToolResult(turn=turn, step=step, message=result))
            self.add(E.StepEnd(turn=turn, step=step))
        self.add(E.TurnEnd(turn=turn, reason=E.TurnEndReason(kind="completed")))

    def compact(self) -> None:
        """Replace the head of the surface (all but about the newest quarter) with a checkpoint."""
        s, nodes = self.s, self.s.nodes
        last = int(len(nodes) * 0.75)
        while last > 0 and not s.tool_pairing_balanced_after(nodes[last]):
            last -= 1
        assert last > 0 and s.tool_pairing_balanced_before(nodes[0])
        shadowed = tuple(nodes[: last + 1])
        cid = self.new_id("cmp_")
        start = self.add(E.CompactionStart(compaction_id=cid, turn=None))
        summary = E.CompactionSummary(
            compaction_id=cid,
            kind="state",
            summary=self.text(2000, 6000),
            shadowed_range=(shadowed[0], shadowed[-1]),
            shadowed_seqs=shadowed,
            shadowed_token_count=sum(s.node_tokens(seq) for seq in shadowed),
            provider="bench",
            model="bench-model",
            usage=E.Usage(input_tokens=50_000, output_tokens=1500),
        )
        summary_seq = self.add(summary).seq
        source = E.PluginSource(plugin="compact", compaction_id=cid)
        self.add(
            self.message("user", (E.TextBlock(text=summary.summary),), source),
            surface_op=E.ReplaceOp(start=shadowed[0], end=shadowed[-1]),
            source_event_seqs=(start.seq, summary_seq, *shadowed),
        )
        self.add(E.CompactionEnd(compaction_id=cid, turn=None))


def build(home: Path, events: int, seed: int) -> tuple[Session, float]:
    """The session (about ``events`` long: the last turn is completed) and its append time."""
    session = Session.create(JsonlStore(home), cwd=str(home))
    builder, turn, every = Builder(session, random.Random(seed)), 0, events // (COMPACTIONS + 1)
    next_compaction = every
    while len(session.events) < events:
        turn += 1
        builder.turn(turn)
        if len(session.events) >= next_compaction and next_compaction <= COMPACTIONS * every:
            builder.compact()
            next_compaction += every
    start = time.perf_counter()
    session.sync()
    return session, builder.elapsed + time.perf_counter() - start


def write_floor(path: Path, lines: list[bytes]) -> float:
    """Seconds to write ``lines`` to a new file with one ``os.write`` each, then one fsync: what
    "a process crash loses nothing appended" costs at the least."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    start = time.perf_counter()
    for line in lines:
        os.write(fd, line)
    os.fsync(fd)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed


def load_average() -> str:
    """The 1/5/15-minute load averages, for the record (figures vary with the machine's load)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def decode_each(path: Path, decode: Callable[[bytes], object]) -> None:
    for line in path.read_bytes().splitlines():
        decode(line)


def peak_rss() -> int:
    """Peak RSS in bytes. Not ``ru_maxrss`` alone: Linux carries a parent's peak into a child."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def measure_load(home: str, session_id: str) -> None:
    """Subprocess mode: print the peak-RSS increase (bytes) of one read-only load."""
    store = JsonlStore(Path(home))
    before = peak_rss()
    Session.open(store, session_id)
    print(peak_rss() - before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, help="store home (default: a temporary directory)")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--measure-load", nargs=2, metavar=("HOME", "ID"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_load:
        return measure_load(*args.measure_load)
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
        home = args.dir or Path(tmp)
        session, append_s = build(home, args.events, args.seed)
        count, session_id, compactions = len(session.events), session.id, len(session.replacements)
        session.close()
        stored = JsonlStore(home).log_path(session_id).read_bytes()
        floor_s = write_floor(Path(tmp) / "floor.jsonl", stored.splitlines(keepends=True)[1:])
        del stored
        del session  # the loads below should see a small heap, as in a fresh process
        gc.collect()
        store = JsonlStore(home)
        path = store.log_path(session_id)
        size = path.stat().st_size
        load_s = best_of(3, lambda: Session.open(store, session_id))
        msgspec_s = best_of(3, lambda: decode_each(path, msgspec.json.Decoder().decode))
        json_s = best_of(3, lambda: decode_each(path, json.loads))
        argv = [sys.executable, __file__, "--measure-load", str(home), session_id]
        peak = int(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
    rate, ratio, mib = count / append_s, load_s / msgspec_s, 1024 * 1024
    floor_rate = count / floor_s

    def mark(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    print(f"session: {count:,} events, {compactions} compactions, seed {args.seed}")
    print(f"load average: {load_average()}")
    rows = [
        ("append (durable, incl. final sync)", f"{rate:,.0f} events/s", ">= 20,000", rate >= 2e4),
        ("baseline: os.write per line + fsync", f"{floor_rate:,.0f} events/s", "", None),
        ("baseline / append", f"{floor_rate / rate:.1f} x", "", None),
        ("file size", f"{size / mib:.1f} MiB", "", None),
        ("load + fold (Session.open, best/3)", f"{load_s:.3f} s", "<= 1.0 s", load_s <= 1.0),
        ("bare msgspec decode (best/3)", f"{msgspec_s:.3f} s", "", None),
        ("bare json.loads (best/3, reference)", f"{json_s:.3f} s", "", None),
        ("load + fold / bare msgspec decode", f"{ratio:.2f} x", "<= 2.0 x", ratio <= 2.0),
        ("load peak RSS increase (VmHWM)", f"{peak / mib:.1f} MiB", "", None),
        ("load peak RSS / file size", f"{peak / size:.2f} x", "<= 3.0 x", peak <= 3 * size),
    ]
    for name, value, target, ok in rows:
        verdict = f"target {target:<10} {mark(ok)}" if ok is not None else ""
        print(f"{name:<37} {value:>18}   {verdict}".rstrip())
    if args.json:
        figures = {
            "events": count,
            "compactions": compactions,
            "append_events_per_s": round(rate),
            "append_floor_events_per_s": round(floor_rate),
            "file_bytes": size,
            "load_fold_s": round(load_s, 4),
            "bare_msgspec_decode_s": round(msgspec_s, 4),
            "bare_json_loads_s": round(json_s, 4),
            "load_over_decode": round(ratio, 2),
            "load_peak_rss_increase_bytes": peak,
            "peak_over_file": round(peak / size, 2),
        }
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
