"""The terminal UI's start-up in a real terminal (tmux): time and CPU to its first frame, against
``python -c pass`` and a bare Textual app measured the same way in the same run.

Each row starts a fresh process in a 120x40 tmux pane (a server of its own, ``-L``), with a
clean environment, a temporary ``DSH_HOME`` and workspace. The child marks, from its first line:

* ``first frame``: the first refresh after the app mounted (``call_after_refresh`` from
  ``on_mount``): the composer is on screen and takes keys;
* ``ready``: the session is open and the composer takes turns (``DshApp.ready``; for a new
  session the same moment as the first frame; for a long log, once the whole log is open);
* ``settled``: start-up work done, ``ready`` plus the app's warm-up thread (``dsh-warm-*``,
  the provider's SDK) finished and its transcript no longer measuring in the background.

Printed per row: the median wall time and CPU time (``time.process_time``: every thread, and
the interpreter's own start) at each mark, and the CPU at the first frame as a ratio to the
same-run baselines: ``python -c pass`` (the interpreter) and ``textual floor`` (an app of a
Static and a TextArea: what Textual itself costs to a first frame). Rows take turns, one run
each per round, so machine load falls on all of them alike; the load average is printed.

Rows: a new session on the scripted provider (``--script``); a new session on ``deepseek``
(the OpenAI SDK) and on ``anthropic`` (its SDK), each with a dummy key (no request is sent:
the app quits at ``settled``); ``--resume`` of a long log of ``--events`` events
(``_web_session.build_session``) on the scripted provider.

``--before SRC`` runs every dsh row a second time on another checkout's ``src`` (first on
``PYTHONPATH``), in the same rounds, and prints the CPU of each mark now over before: a
before/after measured under the same load.

Two regimes, as in ``cli_startup.py``: ``as configured`` (this environment's
``PYTHONDONTWRITEBYTECODE``: without bytecode, every module compiles at every start) and
``bytecode cached`` (a warmed ``PYTHONPYCACHEPREFIX``).

Run: ``uv run python benchmarks/tui_startup.py [--rounds 5] [--events 5000,20000]
[--regime both|configured|cached] [--only scripted,deepseek,…] [--before SRC]`` (needs
tmux). A checkout's ``src`` for ``--before``: ``git archive COMMIT src | tar -x -C DIR``.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # the child's marks count from here: nothing is imported before it

import json  # noqa: E402
import sys  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

WIDTH, HEIGHT = 120, 40
MARKS = ("first_frame", "ready", "settled")
SETTLE_TIMEOUT_S = 60.0
WARM_THREAD_PREFIX = "dsh-warm-"
DUMMY_KEY = "dsh-bench-not-a-key"
BEFORE = " [before]"
"""The label suffix of a row run on ``--before``'s source."""

if TYPE_CHECKING:
    from pathlib import Path


# ---- the child, in the tmux pane ---------------------------------------------------------------


def _mark(marks: dict[str, list[float]], name: str) -> None:
    marks.setdefault(name, [time.perf_counter() - T0, time.process_time()])


def child_floor(out: str) -> None:
    """The baseline: a bare Textual app (a Static and a focused TextArea) to its first frame."""
    from textual.app import App, ComposeResult
    from textual.widgets import Static, TextArea

    marks: dict[str, list[float]] = {}

    class Floor(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("transcript")
            yield TextArea(id="prompt")

        def on_mount(self) -> None:
            self.query_one(TextArea).focus()
            self.call_after_refresh(self.done)

        def done(self) -> None:
            for name in MARKS:
                _mark(marks, name)
            self.exit()

    Floor().run()
    _write(out, marks)


def child_dsh(out: str, argv: list[str]) -> None:
    """``dsh ARGV`` as its console script runs it, the app's start marked (see the module doc)."""
    import threading

    import dsh.tui.app as app_module

    marks: dict[str, list[float]] = {}
    app_class = app_module.DshApp
    on_mount, opened = app_class.on_mount, app_class.opened

    async def settle(app: app_module.DshApp) -> None:
        while getattr(app.transcript, "measuring", False) or any(
            t.name.startswith(WARM_THREAD_PREFIX) for t in threading.enumerate()
        ):
            await _sleep(0.005)
        _mark(marks, "settled")
        app.exit()

    def after_mount(self: app_module.DshApp) -> None:
        on_mount(self)
        self.call_after_refresh(lambda: _mark(marks, "first_frame"))

    def after_open(self: app_module.DshApp, items: list[object]) -> None:
        opened(self, items)  # type: ignore[arg-type]

        def ready() -> None:
            _mark(marks, "first_frame")  # a new session is ready in its first frame
            _mark(marks, "ready")
            self.run_worker(settle(self), group="bench")

        self.call_after_refresh(ready)

    app_class.on_mount = after_mount  # type: ignore[method-assign]
    app_class.opened = after_open  # type: ignore[method-assign]
    import contextlib

    from dsh.cli.main import main

    sys.argv = ["dsh", *argv]
    with contextlib.suppress(SystemExit):  # the app's return code: not this figure's business
        main()
    _write(out, marks)


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def child_pass(out: str) -> None:
    marks: dict[str, list[float]] = {}
    for name in MARKS:
        _mark(marks, name)
    _write(out, marks)


def _write(out: str, marks: dict[str, list[float]]) -> None:
    with open(out + ".part", "w") as f:
        json.dump(marks, f)
    import os

    os.replace(out + ".part", out)


# ---- the harness (its imports inside: the child above pays for none of them) ------------------

Row = tuple[str, str, list[str], dict[str, str]]
"""(label, kind: pass / floor / dsh, dsh's arguments, environment variables)."""
Marks = dict[str, list[float]]
"""mark name -> [wall seconds, CPU seconds] since the child's first line."""


def main() -> None:
    import argparse
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--events", default="5000,20000")
    parser.add_argument("--regime", choices=("both", "configured", "cached"), default="both")
    parser.add_argument(
        "--only", default="", help="comma-separated words: the dsh rows whose label has one"
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="the src directory of another checkout (say, `git archive` of the commit before a "
        "change): each dsh row runs on it too, in the same rounds, on PYTHONPATH",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="dsh-tui-startup-") as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        script = root / "script.yaml"
        script.write_text('- text: "hello"\n')
        rows: list[Row] = [
            ("python -c pass (baseline)", "pass", [], {}),
            ("textual floor (baseline)", "floor", [], {}),
            ("dsh, new session, scripted", "dsh", ["--script", str(script)], {}),
            (
                "dsh, new session, deepseek (openai SDK)",
                "dsh",
                ["--provider", "deepseek"],
                {"DEEPSEEK_API_KEY": DUMMY_KEY},
            ),
            (
                "dsh, new session, anthropic (its SDK)",
                "dsh",
                ["--provider", "anthropic"],
                {"ANTHROPIC_API_KEY": DUMMY_KEY},
            ),
        ]
        for events in [int(n) for n in args.events.split(",") if n]:
            session_id, blocks = long_session(root, events)
            label = f"dsh --resume, {events:,} events ({blocks:,} blocks)"
            rows.append((label, "dsh", ["--resume", session_id, "--script", str(script)], {}))
        words = [w for w in args.only.split(",") if w]
        if words:
            rows = rows[:2] + [r for r in rows[2:] if any(w in r[0] for w in words)]
        if args.before is not None:
            source = {"PYTHONPATH": str(args.before.resolve())}
            twins = [(f"{r[0]}{BEFORE}", r[1], r[2], {**r[3], **source}) for r in rows[2:]]
            rows = rows[:2] + [row for pair in zip(rows[2:], twins, strict=True) for row in pair]
        configured = {}
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            configured["PYTHONDONTWRITEBYTECODE"] = os.environ["PYTHONDONTWRITEBYTECODE"]
        regimes = []
        if args.regime in ("both", "configured"):
            writes = "off" if configured else "on"
            regimes.append((f"as configured (bytecode writing {writes})", configured))
        if args.regime in ("both", "cached"):
            regimes.append(("bytecode cached", {"PYTHONPYCACHEPREFIX": str(root / "pyc")}))

        socket = f"dsh-bench-{os.getpid()}"
        # an idle session keeps the server up between runs (an empty server exits, racing the
        # next run's start)
        keeper = ["tmux", "-L", socket, "new-session", "-d", "-s", "keeper", "cat"]
        subprocess.run(keeper, check=True)
        try:
            print(f"load at start: {load_average()}")
            for title, regime in regimes:
                report(title, measure(root, socket, rows, regime, args.rounds), args.rounds)
            print(f"load at end:   {load_average()}")
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def long_session(root: Path, events: int) -> tuple[str, int]:
    """A stored session of ``events`` events in the rows' ``DSH_HOME``; its id and how many
    transcript blocks it shows."""
    from pathlib import Path

    from dsh.store import JsonlStore
    from dsh.surface import Session
    from dsh.transcript import project
    from dsh.tui.blocks import TranscriptModel

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _web_session import build_session

    store = JsonlStore(root / "home")
    session_id, _, _ = build_session(store, root / "ws", events, seed=events)
    with Session.open(store, session_id) as session:
        model = TranscriptModel()
        model.add(project(session.events)[0])
    return session_id, len(model.blocks)


def measure(
    root: Path, socket: str, rows: list[Row], regime: dict[str, str], rounds: int
) -> dict[str, list[Marks]]:
    """Every row's marks, ``rounds`` runs each taking turns (one untimed run each first: it
    warms the page cache, and the bytecode cache where there is one)."""
    samples: dict[str, list[Marks]] = {label: [] for label, *_ in rows}
    for round_ in range(rounds + 1):
        for label, kind, argv, env in rows:
            marks = run_in_tmux(root, socket, kind, argv, {**regime, **env})
            if round_:
                samples[label].append(marks)
    return samples


def run_in_tmux(root: Path, socket: str, kind: str, argv: list[str], env: dict[str, str]) -> Marks:
    """One child in a new tmux pane, with only ``env`` (and PATH, HOME, TERM, LANG, DSH_HOME)
    in its environment; its marks."""
    import os
    import shlex
    import subprocess

    out = root / f"marks-{time.monotonic_ns()}.json"
    variables = {
        "HOME": str(root),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "DSH_HOME": str(root / "home"),
        **env,
    }
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in variables.items())
    child = shlex.join([sys.executable, os.path.abspath(__file__), "--child", str(out), kind])
    child = " ".join([child, *map(shlex.quote, argv)])
    workspace = shlex.quote(str(root / "ws"))
    command = f'cd {workspace} && exec env -i TERM="$TERM" {assignments} {child}'
    name = f"run-{out.stem}"
    tmux = ["tmux", "-L", socket]
    size = ["-x", str(WIDTH), "-y", str(HEIGHT)]
    subprocess.run([*tmux, "new-session", "-d", "-s", name, *size, command], check=True)
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while not out.exists():
        if time.monotonic() > deadline:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", name], capture_output=True, text=True
            ).stdout
            subprocess.run([*tmux, "kill-session", "-t", name], capture_output=True)
            raise SystemExit(f"{kind} {argv} did not settle; its screen:\n{screen}")
        time.sleep(0.05)
    subprocess.run([*tmux, "kill-session", "-t", name], capture_output=True)
    marks: Marks = json.loads(out.read_text())
    missing = set(MARKS) - set(marks)
    if missing:
        raise SystemExit(f"{kind} {argv}: no {', '.join(sorted(missing))} mark")
    return marks


def report(title: str, figures: dict[str, list[Marks]], rounds: int) -> None:
    """Median wall / CPU ms per mark and row; first-frame CPU over both baselines; with
    ``--before``, each mark's CPU now over before."""
    import statistics

    def ms(label: str, mark: str, which: int) -> float:
        return statistics.median(m[mark][which] for m in figures[label]) * 1000

    labels = list(figures)
    base_pass, base_floor = (ms(label, "first_frame", 1) for label in labels[:2])
    print(f"{title}: median of {rounds} runs, ms wall / ms cpu")
    print(
        f"  {'':50s}{'first frame':>15s}{'ready':>15s}{'settled':>15s}"
        f"{'cpu÷pass':>10s}{'cpu÷floor':>11s}"
    )
    for label in labels:
        cells = "".join(f"{ms(label, mark, 0):7.0f} /{ms(label, mark, 1):6.0f}" for mark in MARKS)
        cpu = ms(label, "first_frame", 1)
        print(f"  {label:50s}{cells}{cpu / base_pass:9.1f}x{cpu / base_floor:10.2f}x")
        if label.endswith(BEFORE):
            now = label.removesuffix(BEFORE)
            ratios = "".join(f"{ms(now, mark, 1) / ms(label, mark, 1):14.2f}x" for mark in MARKS)
            print(f"  {'  cpu now ÷ before':50s}{ratios}")


def load_average() -> str:
    import os

    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--child":
        kind_out, kind = sys.argv[2], sys.argv[3]
        if kind == "pass":
            child_pass(kind_out)
        elif kind == "floor":
            child_floor(kind_out)
        else:
            child_dsh(kind_out, sys.argv[4:])
    else:
        main()
