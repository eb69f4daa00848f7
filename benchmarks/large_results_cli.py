"""Peak memory and time of ``dsh sessions show`` / ``export`` on a session of large tool results
(the CLI audit's 155 MB log: ``show`` took 836 MB and 11.5 s), against opening the same session
in the same run.

A TypeScript-harness log of ``--turns`` turns, each a user message, a ``read_file`` call, a tool
result of ``--result-kb`` KiB (text with a non-ASCII character, so Python holds it wide) and a
reply, is imported with ``dsh sessions import`` into a temporary ``DSH_HOME``. Then each command
runs in a fresh subprocess with the CLI imported beforehand, its output to ``/dev/null``; printed
per command: the increase of the peak RSS (``VmHWM``) over the value just before, the wall time,
and both as ratios to ``open`` (the baseline: ``SessionLog`` opened read-only and held, what
every command that reads the log pays). Target: each view adds at most ``EXTRA`` (32 MiB) to
the open's peak: it writes a bounded piece at a time, never the whole rendered text.

Run: ``uv run python benchmarks/large_results_cli.py [--turns 150] [--result-kb 1024]``
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXTRA = 32 * 1024 * 1024
MIB = 1024 * 1024
COMMANDS = {
    "show transcript": ["sessions", "show", "ID"],
    "show events": ["sessions", "show", "ID", "--view", "events"],
    "show surface": ["sessions", "show", "ID", "--view", "surface"],
    "export md": ["sessions", "export", "ID", "-o", "OUT"],
    "export jsonl": ["sessions", "export", "ID", "--format", "jsonl", "-o", "OUT"],
    "stats": ["sessions", "stats", "ID"],
}


def peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no VmHWM in /proc/self/status (Linux only)")


def upstream_log(path: Path, turns: int, result_kb: int) -> None:
    """An upstream log of ``turns`` turns with one ``result_kb`` KiB tool result each."""
    line = "def handler(event): return cache.get(event.key)  # café\n"
    body = (line * (result_kb * 1024 // len(line) + 1))[: result_kb * 1024]
    header = {"type": "session", "version": 0, "id": "big", "createdAt": 1767225600000}
    rows: list[dict[str, object]] = []

    def event(kind: str, data: dict[str, object], **extra: object) -> None:
        rows.append({"type": kind, "seq": len(rows), "time": 1767225600000 + len(rows)})
        rows[-1].update(data=data, **extra)

    model = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}
    with path.open("w") as out:
        out.write(json.dumps(header) + "\n")
        for turn in range(1, turns + 1):
            rows.clear()
            base = (turn - 1) * 10
            rows.extend([{}] * base)  # seqs continue across turns; only the new rows are written
            call = f"call-{turn}"
            event("turn/start", {"turn": turn})
            event("step/start", {"turn": turn, "step": 1})
            text = [{"type": "text", "text": f"Read part {turn}."}]
            event(
                "user/message",
                {"id": f"u{turn}", "role": "user", "content": text, "source": {"kind": "user"}},
                surfaceOp="append",
            )
            args = json.dumps({"path": f"part{turn}.py"})
            tool_call = {"type": "tool-call", "id": call, "name": "read_file", "arguments": args}
            message = {"id": f"a{turn}", "role": "assistant", "content": [tool_call]}
            event(
                "assistant/message",
                {"turn": turn, "step": 1, "message": {**message, "source": model}},
                surfaceOp="append",
            )
            event(
                "tool/call",
                {"turn": turn, "step": 1, "callId": call, "name": "read_file", "arguments": args},
            )
            result = {
                "type": "tool-result",
                "toolCallId": call,
                "content": [{"type": "text", "text": body}],
            }
            event(
                "tool/result",
                {
                    "turn": turn,
                    "step": 1,
                    "message": {
                        "id": f"r{turn}",
                        "role": "user",
                        "content": [result],
                        "source": {"kind": "tool", "callId": call},
                    },
                },
                surfaceOp="append",
                sourceEventSeqs=[base + 4],
            )
            event("step/end", {"turn": turn, "step": 1})
            event("step/start", {"turn": turn, "step": 2})
            reply = {
                "id": f"b{turn}",
                "role": "assistant",
                "content": [{"type": "text", "text": "It reads the cache."}],
                "source": model,
            }
            event(
                "assistant/message", {"turn": turn, "step": 2, "message": reply}, surfaceOp="append"
            )
            event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
            for row in rows[base:]:
                out.write(json.dumps(row) + "\n")


def child(name: str, session_id: str, out: str) -> None:
    """Subprocess mode: print the peak RSS increase and the time of one command."""
    for module in ("dsh.cli.sessions", "dsh.transcript.markdown", "dsh.transcript.stats"):
        importlib.import_module(module)
    from dsh.cli.main import cli
    from dsh.config import dsh_home
    from dsh.store import JsonlStore

    gc.collect()
    before, start = peak_rss(), time.perf_counter()
    if name == "open":
        held = JsonlStore(dsh_home()).open(session_id)
    else:
        argv = [{"ID": session_id, "OUT": out}.get(a, a) for a in COMMANDS[name]]
        with open(os.devnull, "w") as sink:
            sys.stdout = sink
            cli.main(argv, standalone_mode=False)
            sys.stdout = sys.__stdout__
    seconds = time.perf_counter() - start
    print(json.dumps({"peak": peak_rss() - before, "seconds": seconds}))
    if name == "open":
        held.close()


def measure(name: str, home: Path, session_id: str, out: Path) -> tuple[int, float]:
    argv = [sys.executable, __file__, "--child", name, session_id, str(out)]
    env = {**os.environ, "DSH_HOME": str(home)}
    done = subprocess.run(argv, check=True, capture_output=True, text=True, env=env)
    figures = json.loads(done.stdout.splitlines()[-1])
    return figures["peak"], figures["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--result-kb", type=int, default=1024)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    with tempfile.TemporaryDirectory(prefix="dsh-large-") as tmp:
        root = Path(tmp)
        log, home = root / "big.jsonl", root / "home"
        upstream_log(log, args.turns, args.result_kb)
        env = {**os.environ, "DSH_HOME": str(home)}
        dsh = str(Path(sys.executable).with_name("dsh"))
        start = time.perf_counter()
        argv = [dsh, "sessions", "import", str(log), "--id", "big"]
        subprocess.run(argv, check=True, capture_output=True, env=env, cwd=root)
        imported = time.perf_counter() - start
        size = (home / "sessions" / "big" / "session.jsonl").stat().st_size
        print(
            f"{args.turns} turns of {args.result_kb} KiB results: log {size / MIB:.0f} MiB, "
            f"import {imported:.1f} s; load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        opened, open_s = measure("open", home, "big", root / "unused")
        print(f"  open (baseline)   {opened / MIB:6.0f} MiB  {open_s:5.2f} s", flush=True)
        for name in COMMANDS:
            out = root / "out"
            peak, seconds = measure(name, home, "big", out)
            met = peak <= opened + EXTRA
            print(
                f"  {name:<17} {peak / MIB:6.0f} MiB  {seconds:5.2f} s   {peak / opened:5.2f}x "
                f"/ {seconds / open_s:5.2f}x the open   target <= open + {EXTRA // MIB} MiB "
                f"{'PASS' if met else 'MISS'}",
                flush=True,
            )
            out.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
