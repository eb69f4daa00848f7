"""The terminal UI tells the person once when a reply asked for more tool calls than
``tools.max_calls_per_reply`` (a toast, and a row in ``/warnings``; ``dsh.agent.call_cap``),
and shows the calls it kept from running as ONE dim card (``dsh.transcript.call_fold``) that
expands to each call, the same live and opened cold."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import dsh.tui.app_warnings
from tests.tui.conftest import SIZE, Rig, settle, submit
from tests.tui.test_pilot import text_of
from tests.tui.test_warnings import run_with_toasts, toasts

SAID = (
    "warning: the model's reply asked for 5 tool calls: the first 2 ran, the other 3 were not "
    "run (tools.max_calls_per_reply = 2)"
)


def test_a_reply_past_the_limit_shows_one_toast_and_its_calls_are_answered(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(dsh.tui.app_warnings, "TOAST_SECONDS", 3600.0)
    (rig.workspace / "a.txt").write_text("hello\n")
    calls = [{"name": "read_file", "arguments": {"path": "a.txt", "n": n}} for n in range(5)]
    app = rig.app(
        [{"toolCalls": calls}, {"text": "read it"}], agent_config={"max_calls_per_reply": 2}
    )

    async def body(pilot: Any) -> None:
        await submit(pilot, "go")
        await settle(pilot, lambda: "read it" in text_of(app) and not app.running)
        await settle(pilot, lambda: bool(toasts(app)))
        assert toasts(app) == [("warning", SAID)]
        assert "TOO_MANY_CALLS" not in text_of(app)  # folded: one card, not three red ones
        assert text_of(app).count("3 more calls not run") == 1

    run_with_toasts(app, body)


FOLD = (
    "5 more calls not run: the reply asked for 7, at most 2 run per reply "
    "(tools.max_calls_per_reply)"
)


def test_the_calls_past_the_limit_are_one_card_that_expands_live_as_opened_cold(rig: Rig):
    (rig.workspace / "a.txt").write_text("hello\n")
    ran = [{"name": "read_file", "arguments": {"path": "a.txt"}}] * 2
    unrun = [
        *[{"name": "list_dir", "arguments": {"path": f"d{n}"}} for n in range(2)],
        *[{"name": "read_file", "arguments": {"path": f"f{n}.txt"}} for n in range(3)],
    ]
    app = rig.app(
        [{"toolCalls": ran + unrun}, {"text": "read it"}],
        agent_config={"max_calls_per_reply": 2},
    )
    seen: dict[str, list[str]] = {}

    async def live(pilot: Any) -> None:
        await submit(pilot, "go")
        await settle(pilot, lambda: "read it" in text_of(app) and not app.running)
        seen["live"] = app.transcript.rendered_lines()
        assert app.controller.session is not None
        seen["id"] = [app.controller.session.id]

    async def main(subject: Any, body: Any) -> None:
        async with subject.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: subject.ready)
            await body(pilot)

    asyncio.run(main(app, live))
    lines = seen["live"]
    cards = [b for b in app.transcript.model.blocks if b.kind in ("tool", "result", "unrun")]
    assert [(b.kind, b.label) for b in cards] == [
        ("tool", "read_file"),
        ("tool", "read_file"),
        ("unrun", ""),
    ]
    at = next(i for i, line in enumerate(lines) if "▸ 5 more calls not run" in line)
    assert " ".join(lines[at : at + 2]).split() == f"▸ {FOLD}".split()  # wrapped at 100
    assert lines[at + 2] == "    └ read_file ×3, list_dir ×2"
    assert not any("TOO_MANY_CALLS" in line for line in lines)
    cold = rig.app([], resume=seen["id"][0])

    async def opened(pilot: Any) -> None:
        seen["cold"] = cold.transcript.rendered_lines()
        index = next(i for i, b in enumerate(cold.transcript.model.blocks) if b.kind == "unrun")
        cold.transcript.toggle(index)
        await settle(pilot, lambda: "not run" in [x.strip() for x in text_of(cold).split("\n")])
        seen["expanded"] = cold.transcript.rendered_lines()

    asyncio.run(main(cold, opened))
    assert seen["cold"] == lines  # live equals replay
    expanded = seen["expanded"]
    start = expanded.index("    not run")
    assert expanded[start + 1 : start + 6] == [
        "      list_dir  d0",
        "      list_dir  d1",
        "      read_file  f0.txt",
        "      read_file  f1.txt",
        "      read_file  f2.txt",
    ]


def test_the_fold_card_expanded_snapshot(snap_compare, rig: Rig):
    """The card as the screen draws it (dim, the note in yellow) in a log opened cold,
    expanded to its calls."""
    (rig.workspace / "a.txt").write_text("hello\n")
    ran = [{"name": "read_file", "arguments": {"path": "a.txt"}}]
    unrun = [{"name": "bash", "arguments": {"command": f"echo {n}"}} for n in range(4)]
    app = rig.app(
        [{"toolCalls": ran + unrun}, {"text": "done"}], agent_config={"max_calls_per_reply": 1}
    )
    ids: list[str] = []

    async def record(pilot: Any) -> None:
        await submit(pilot, "go")
        await settle(pilot, lambda: "done" in text_of(app) and not app.running)
        assert app.controller.session is not None
        ids.append(app.controller.session.id)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await record(pilot)

    asyncio.run(main())
    cold = rig.app([], resume=ids[0])

    async def expand(pilot: Any) -> None:
        await settle(pilot, lambda: cold.ready)
        index = next(i for i, b in enumerate(cold.transcript.model.blocks) if b.kind == "unrun")
        cold.transcript.toggle(index)
        await settle(pilot, lambda: "echo 3" in text_of(cold))

    assert snap_compare(cold, terminal_size=(80, 24), run_before=expand)
