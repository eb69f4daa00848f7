"""``/context`` and ``/cost`` in the terminal UI: what the model sees, part by part, and the
billed tokens with a list-price estimate."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from dsh.agent.billing import render_cost
from dsh.agent.context_fold import ContextFold
from dsh.events import Event, Usage
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tui.context_view import cost_text
from tests.agent.context_reference import whole_log_cost_report
from tests.helpers import append_chat_turn, new_session
from tests.tui.conftest import SIZE, Rig, run_prompt, settle, status_at_rest, submit
from tests.tui.test_pilot import run, text_of


def test_context_lists_each_part_with_tokens_and_the_cache_hits(rig: Rig):
    rig.cache = "deepseek"
    app = rig.app([{"text": "first answer"}, {"text": "second answer"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "one")
        await run_prompt(pilot, "two")
        await submit(pilot, "/context")
        await settle(pilot, lambda: "What the model sees" in text_of(app))
        text = text_of(app)
        for part in ("system", "tools", "stubs", "state", "tail"):
            assert f"  {part} " in text, part
        assert "4 messages" in text  # two prompts and two answers
        assert "over 2 call(s)" in text and "of 128,000" in text

    run(app, body)


def test_cost_shows_the_billed_tokens_and_the_estimate(rig: Rig):
    app = rig.app([{"text": "an answer"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "hi")
        await submit(pilot, "/cost")
        await settle(pilot, lambda: "Billed tokens" in text_of(app))
        text = text_of(app)
        assert "scripted:scripted (conversation, 1 call(s))" in text
        assert "Estimated total: $" in text

    run(app, body)


def test_before_the_first_prompt_both_say_nothing_was_sent(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/context")
        await submit(pilot, "/cost")
        await settle(pilot, lambda: text_of(app).count("Nothing sent yet") == 2)
        assert app.controller.session is None  # asking created no session

    run(app, body)


def test_context_snapshot(snap_compare, rig: Rig):
    app = rig.app([{"text": "Done: the answer."}])

    async def ask(pilot: Any) -> None:
        await run_prompt(pilot, "what is in the context?")
        await submit(pilot, "/context")
        await settle(pilot, lambda: "Cache hits" in text_of(pilot.app))
        await settle(pilot, lambda: status_at_rest(pilot.app))

    assert snap_compare(app, terminal_size=SIZE, run_before=ask)


def test_cost_reads_only_what_was_appended_since_the_last_ask(monkeypatch):
    """``/cost`` bills from the controller's ``ContextFold``: after one more turn it reads that
    turn's events, never the whole log (a scan of the log fails here), and says what a scan
    of the whole log says."""
    session = new_session(MemoryStore())
    for turn in range(30):
        append_chat_turn(session, usage=Usage(input_tokens=turn, output_tokens=3))
    controller = SimpleNamespace(session=session, context=ContextFold())
    cost_text(controller)  # type: ignore[arg-type]
    append_chat_turn(session, usage=Usage(input_tokens=7, output_tokens=1, cache_read_tokens=2))
    real = session.events

    class NoScan(Sequence[Event]):
        def __len__(self) -> int:
            return len(real)

        def __getitem__(self, index):  # type: ignore[no-untyped-def]
            if isinstance(index, slice) and len(real) - index.start > 10:
                raise AssertionError("more than the appended turn was read")
            return real[index]

        def __iter__(self) -> Iterator[Event]:
            raise AssertionError("the log was scanned")

    with monkeypatch.context() as patch:
        patch.setattr(Session, "events", property(lambda self: NoScan()))
        text = cost_text(controller)  # type: ignore[arg-type]
    assert text == render_cost(whole_log_cost_report(real))
    assert "(conversation, 31 call(s))" in text


@pytest.mark.parametrize("how", ["at launch", "newest page first", "with /resume"])
def test_a_resumed_sessions_context_use_shows_at_open_as_context_measures_it(rig: Rig, how: str):
    first = rig.app([{"text": "a long answer " * 300}])

    async def record(pilot: Any) -> None:
        await run_prompt(pilot, "say a lot")

    run(first, record)
    assert first.last_session_id is not None
    resume = first.last_session_id if how != "with /resume" else None
    app = rig.app([], resume=resume)
    app.first_page_from = 0 if how == "newest page first" else app.first_page_from

    async def body(pilot: Any) -> None:
        if resume is None:
            await submit(pilot, f"/resume {first.last_session_id}")
            await settle(pilot, lambda: "Resumed session" in text_of(app))
        await settle(pilot, lambda: app.ready and status_at_rest(app))
        shown = app.status_bar.info.context_tokens  # before any request or /context
        await submit(pilot, "/context")
        await settle(pilot, lambda: "Measured for compaction" in text_of(app))
        measured = re.search(r"Measured for compaction: ([\d,]+) tokens", text_of(app))
        assert measured is not None and shown == int(measured.group(1).replace(",", "")) > 1000

    run(app, body)
