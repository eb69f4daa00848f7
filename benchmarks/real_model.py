"""dsh against a real model: a local llama.cpp ``llama-server`` on 127.0.0.1, end to end.

    DSH_LLAMA_SERVER=/path/to/llama-server DSH_LLAMA_MODEL=/path/to/model.gguf \\
        uv run python benchmarks/real_model.py [--ctx 4096] [--record FILE]

``DSH_LLAMA_EXTRA_ARGS`` adds server flags (``--no-repack`` where the server crashes loading a
model on a CPU that advertises AMX it cannot run).

Nothing is built or downloaded here: it reuses a ``llama-server`` binary you built (or
installed) and a GGUF file you have. Without them it prints why and exits 0. It starts the
server with a small context, then drives ``dsh run`` / ``dsh compact`` / ``dsh recall`` as
real subprocesses through:

1. streaming text (the adapter itself: deltas and time to first token);
2. a first ``dsh run`` turn that needs a tool (``read_file`` on a planted file, the answer
   quoting it), with the window dsh discovered from ``/props`` logged in ``request/context``;
3. usage with cached tokens on the next turn of the same session;
4. overflow → compact → retry: a long scripted history, continued on the real server with a
   window dsh is told is far larger than the server's, so the server refuses the request;
5. a compaction pass with the real model as summariser (``dsh compact``): how many
   checkpoints the model wrote and how many degraded to pointer stubs;
6. ``dsh recall search`` for the planted fact in the compacted session;
7. the online bench on the smallest scenario with the real model (reported as it goes).

It prints one row per step: ok or not, seconds, and what was seen. ``--record FILE`` copies
the session of steps 1-3 to FILE (the replay fixture of the test suite).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.events import Message, TextBlock, UserSource
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.types import ModelRequest, TextDelta

DSH = str(Path(sys.executable).with_name("dsh"))
MODEL = "qwen2.5-coder-0.5b"
FACT = "ORCHID-4417"
TOOL_PROMPT = "Use the read_file tool to read notes.txt, then tell me the release code in it."
PROMPTS = ("Reply with one short sentence: what is 2 + 2?",)
MAX_OUTPUT = 256
"""provider.max_output_tokens for every dsh call: unbounded, the 0.5B model once looped on
text tool calls until the 4096-token window was full (1809 tokens at ~3.6 tokens/s)."""


@dataclass
class Row:
    step: str
    ok: bool
    seconds: float
    seen: str


@dataclass
class Lab:
    """The running server and a scratch DSH_HOME / workspace for the subprocesses."""

    url: str
    ctx: int
    home: Path
    workspace: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
        env.update(DSH_HOME=str(self.home), DSH_PROVIDER_MAX_OUTPUT_TOKENS=str(MAX_OUTPUT))
        env.update(extra)
        return env

    def dsh(self, *args: str, timeout: float = 900, **extra: str) -> tuple[Any, float]:
        started = time.perf_counter()
        done = subprocess.run(
            [DSH, *args],
            env=self.env(**extra),
            cwd=self.workspace,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return done, time.perf_counter() - started

    def route(self) -> list[str]:
        return ["--provider", "openai-compatible", "--base-url", self.url, "--model", MODEL]

    def events(self, session_id: str) -> list[dict[str, Any]]:
        path = self.home / "sessions" / session_id / "session.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def session_of(stderr: str) -> str:
    """The id ``dsh run`` names on stderr (``session: ID``) as its first turn starts."""
    return next(
        line.removeprefix("session: ")
        for line in stderr.splitlines()
        if line.startswith("session: ")
    )


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


# ---- the server ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    binary: Path, model: Path, ctx: int, log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    command += ["-c", str(ctx), "-np", "1", "--jinja", "-t", str(min(4, os.cpu_count() or 2))]
    command += shlex.split(os.environ.get("DSH_LLAMA_EXTRA_ARGS", ""))  # e.g. --no-repack
    handle = log.open("wb")
    process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited with {process.returncode}; see {log}")
        try:
            with urllib.request.urlopen(root + "/health", timeout=2) as answer:
                if answer.status == 200:
                    return process, root + "/v1"
        except OSError:
            pass
        time.sleep(1)
    process.terminate()
    raise RuntimeError(f"llama-server did not become healthy in 300 s; see {log}")


# ---- the steps -------------------------------------------------------------------------------


def step_stream(lab: Lab) -> Row:
    provider = OpenAICompatProvider("openai-compatible", MODEL, lab.url, "none")
    user = Message(
        id="u", role="user", content=(TextBlock(text="Count to five."),), source=UserSource()
    )
    request = ModelRequest(
        provider="openai-compatible",
        model=MODEL,
        system="You are brief.",
        tools=(),
        messages=(user,),
        params={"max_tokens": 48},
    )

    async def drain() -> tuple[int, float, float]:
        started = time.perf_counter()
        first = None
        deltas = 0
        async for event in provider.stream(request, history=()):
            if isinstance(event, TextDelta):
                deltas += 1
                first = first if first is not None else time.perf_counter() - started
        return deltas, first or 0.0, time.perf_counter() - started

    deltas, ttft, total = asyncio.run(drain())
    return Row(
        "stream (adapter)", deltas > 1, total, f"{deltas} text deltas, first after {ttft:.2f} s"
    )


def step_tool_turn(lab: Lab) -> tuple[list[Row], str | None]:
    """A fresh session's first turn: the tool prompt (window discovery + a tool round trip)."""
    done, seconds = lab.dsh("run", *lab.route(), "--max-steps", "4", TOOL_PROMPT)
    if "session:" not in done.stdout:
        return [Row("dsh run turn + window", False, seconds, done.stderr.strip()[-200:])], None
    sid = session_of(done.stderr)
    events = lab.events(sid)
    windows = [e["data"].get("contextWindow") for e in of_type(events, "request/context")]
    calls = [e["data"] for e in of_type(events, "tool/call")]
    results = [json.dumps(e["data"]) for e in of_type(events, "tool/result")]
    names = [f"{c.get('name')}{' (text)' if c.get('fromText') else ''}" for c in calls]
    steps = len(of_type(events, "assistant/message"))
    ends = [e["data"]["reason"]["kind"] for e in of_type(events, "turn/end")]
    answer = done.stdout.strip().splitlines()[0][:50]
    ok = bool(calls) and any(FACT in r for r in results) and FACT in done.stdout
    return [
        Row("dsh run turn + window", windows == [lab.ctx], seconds, f"window {windows}"),
        Row(
            "tool call round trip",
            ok,
            seconds,
            f"calls {names}; {steps} steps, end {ends}; answer {answer!r}",
        ),
    ], sid


def step_cached(lab: Lab, sid: str) -> Row:
    done, seconds = lab.dsh("run", *lab.route(), "--session", sid, PROMPTS[0])
    usages = [e["data"].get("usage") or {} for e in of_type(lab.events(sid), "assistant/message")]
    last = usages[-1] if usages else {}
    cached = last.get("cacheReadTokens") or 0
    seen = f"usage {last}" if done.returncode == 0 else done.stderr.strip()[-200:]
    return Row("usage with cached tokens", done.returncode == 0 and cached > 0, seconds, seen)


def long_history(lab: Lab, turns: int, chars: int, **settings: str) -> str:
    """A keyless scripted session of ``turns`` long turns, the fact planted in the first.

    A session keeps the compaction settings it was first run with (its ``session/settings``
    event), so the budgets and summariser a later step needs are given here, at seeding."""
    filler = "The build pipeline log line repeats with small variations. " * (chars // 60)
    script = [{"text": f"Noted ({i}). {filler}"} for i in range(turns)]
    (lab.workspace / "script.json").write_text(json.dumps(script))
    prompts = [f"Remember: the release code is {FACT}. {filler}"]
    prompts += [f"Turn {i}: {filler}" for i in range(1, turns)]
    (lab.workspace / "prompts.txt").write_text("\n".join(prompts) + "\n")
    done, _ = lab.dsh(
        "run", "--script", "script.json", "--prompts-file", "prompts.txt", **settings
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"seeding failed: {done.stderr.strip()}")
    return session_of(done.stderr)


def step_overflow(lab: Lab) -> Row:
    sid = long_history(
        lab, turns=6, chars=2400, DSH_COMPACTION_CHUNK_TOKENS="1000",
        DSH_COMPACTION_STUB_TOKENS="100", DSH_COMPACTION_STATE_MAX_TOKENS="500",
    )  # fmt: skip
    done, seconds = lab.dsh(
        "run", *lab.route(), "--session", sid, "--context-window", "200000",
        "What is the release code? Answer with the code only.",
    )  # fmt: skip
    events = lab.events(sid)
    errors = [e["data"]["code"] for e in of_type(events, "request/error")]
    compactions = of_type(events, "compaction/end")
    answer = done.stdout.strip().splitlines()[0] if done.stdout.strip() else done.stderr.strip()
    ok = "CONTEXT_WINDOW_EXCEEDED" in errors and bool(compactions) and done.returncode == 0
    seen = f"errors {errors}; {len(compactions)} compaction(s); answer {answer[:60]!r}"
    return Row("overflow -> compact -> retry", ok, seconds, seen)


def step_model_summarizer(lab: Lab) -> tuple[Row, str]:
    sid = long_history(
        lab, turns=4, chars=900, DSH_COMPACTION_SUMMARIZER=MODEL,
        DSH_COMPACTION_SUMMARIZER_PROVIDER="openai-compatible",
        DSH_COMPACTION_SUMMARIZER_BASE_URL=lab.url,
        DSH_COMPACTION_CHUNK_TOKENS="600", DSH_COMPACTION_STUB_TOKENS="120",
        DSH_COMPACTION_STATE_MAX_TOKENS="400", DSH_COMPACTION_RETAIN_TOKENS="200",
    )  # fmt: skip
    done, seconds = lab.dsh("compact", sid)
    summaries = [e["data"] for e in of_type(lab.events(sid), "compaction/summary")]
    by_model = [s for s in summaries if s.get("llmStreamCall")]
    pointers = [s for s in summaries if not s.get("llmStreamCall")]
    kinds = [
        f"{s.get('kind')}:{'model' if s.get('llmStreamCall') else 'pointer'}" for s in summaries
    ]
    first = (by_model[0].get("summary") or "")[:80] if by_model else ""
    ok = done.returncode == 0 and bool(by_model)
    seen = f"{len(by_model)} by the model, {len(pointers)} pointer/extractive {kinds}; {first!r}"
    if done.returncode != 0:
        seen = (done.stderr.strip() or done.stdout.strip())[-200:]
    return Row("compaction, real summariser", ok, seconds, seen), sid


def step_recall(lab: Lab, sid: str) -> Row:
    done, seconds = lab.dsh("recall", "search", sid, FACT)
    first = next((line for line in done.stdout.splitlines() if FACT in line), "")
    return Row("dsh recall search", done.returncode == 0 and bool(first), seconds, first[:90])


def step_online_bench(lab: Lab) -> Row:
    out = lab.home / "bench"
    done, seconds = lab.dsh(
        "bench", "run", "--scenario", "bugfix-small", "--backend", "recallable", "--online",
        "--provider", "openai-compatible", "--model", MODEL, "--questions", "1", "--jobs", "1",
        "--out", str(out), timeout=1800, DSH_PROVIDER_BASE_URL=lab.url,
    )  # fmt: skip
    seen = (done.stderr.strip() or done.stdout.strip()).splitlines()
    return Row(
        "online bench (bugfix-small)", done.returncode == 0, seconds, (seen or [""])[-1][:120]
    )


# ---- main ------------------------------------------------------------------------------------


def guarded(name: str, run: Callable[[], Row]) -> Row:
    started = time.perf_counter()
    try:
        return run()
    except Exception as exc:  # a failed step is a row, not the end of the run
        return Row(name, False, time.perf_counter() - started, f"{type(exc).__name__}: {exc}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=os.environ.get("DSH_LLAMA_SERVER"))
    parser.add_argument("--model-file", default=os.environ.get("DSH_LLAMA_MODEL"))
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--record", type=Path, help="Copy the steps 1-3 session here.")
    parser.add_argument("--skip-bench", action="store_true", help="Leave out step 7.")
    args = parser.parse_args()
    binary = Path(args.server) if args.server else None
    if binary is None and shutil.which("llama-server"):
        binary = Path(str(shutil.which("llama-server")))
    if binary is None or not binary.is_file():
        print("real_model: skipped: no llama-server binary (set DSH_LLAMA_SERVER or --server)")
        return 0
    if not args.model_file or not Path(args.model_file).is_file():
        print("real_model: skipped: no GGUF model file (set DSH_LLAMA_MODEL or --model-file)")
        return 0
    with tempfile.TemporaryDirectory(prefix="dsh-real-") as scratch:
        root = Path(scratch)
        (root / "ws").mkdir()
        (root / "ws" / "notes.txt").write_text(f"Release notes.\nThe release code is {FACT}.\n")
        started = time.perf_counter()
        process, url = start_server(binary, Path(args.model_file), args.ctx, root / "server.log")
        print(f"llama-server up in {time.perf_counter() - started:.1f} s at {url} (ctx {args.ctx})")
        lab = Lab(url=url, ctx=args.ctx, home=root / "home", workspace=root / "ws")
        rows: list[Row] = []
        try:
            rows.append(guarded("stream (adapter)", lambda: step_stream(lab)))
            first, sid = step_tool_turn(lab)
            rows += first
            if sid is not None:
                rows.append(guarded("usage with cached tokens", lambda: step_cached(lab, sid)))
                if args.record is not None:
                    shutil.copyfile(lab.home / "sessions" / sid / "session.jsonl", args.record)
            rows.append(guarded("overflow -> compact -> retry", lambda: step_overflow(lab)))
            summarised: list[str] = []

            def summarise() -> Row:
                row, compacted = step_model_summarizer(lab)
                summarised.append(compacted)
                return row

            rows.append(guarded("compaction, real summariser", summarise))
            if summarised:
                rows.append(guarded("dsh recall search", lambda: step_recall(lab, summarised[0])))
            if not args.skip_bench:
                rows.append(guarded("online bench (bugfix-small)", lambda: step_online_bench(lab)))
        finally:
            process.terminate()
            process.wait(timeout=30)
    width = max(len(r.step) for r in rows)
    print(f"\n{'step'.ljust(width)}  ok    seconds  seen")
    for r in rows:
        print(f"{r.step.ljust(width)}  {'yes' if r.ok else 'NO '}  {r.seconds:8.1f}  {r.seen}")
    print(f"\n{sum(r.ok for r in rows)}/{len(rows)} steps worked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
