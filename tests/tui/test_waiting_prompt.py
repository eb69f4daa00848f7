"""A prompt sent while the automatic compaction pass ahead of its turn runs shows at once, at the
transcript's end, marked as waiting for that pass (the loop logs it only after the pass: with a
slow summariser, minutes later), and the status bar says a pass runs. Logged, it takes that
place; a pass that fails or is cancelled shows a note of its own and the prompt is never lost:
a cancelled turn logs it, a turn that ends before it could be logged puts it back in the box.
The summariser is held by an event, so the pass ends when the test says."""

from __future__ import annotations

import asyncio
import errno
import os
from typing import Any

import pytest

from dsh.compaction import ExtractiveSummarizer
from dsh.compaction.summarizer import SummaryOutput, SummaryTask
from dsh.errors import ProviderError
from dsh.events import CompactionEndEvent, UserMessageEvent, UserSource
from dsh.tui import DshApp
from dsh.tui.live_tail import WAITING_FOR_PASS
from tests.tui.conftest import SIZE, Rig, settle, status_at_rest, submit
from tests.tui.test_pilot import lines_of, logged, run, text_of

ANSWER = "words " * 150
WINDOW = 4096


class HeldSummarizer:
    """The extractive summariser, each call held until ``release`` is set; ``fails``: the call
    then fails as a provider would."""

    def __init__(self, *, fails: bool = False) -> None:
        self.inner = ExtractiveSummarizer()
        self.name, self.model = "held", "held"
        self.release = asyncio.Event()
        self.calls = 0
        self.fails = fails

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        self.calls += 1
        await self.release.wait()
        if self.fails:
            raise ProviderError("server_error", "the summariser's server went away")
        return await self.inner.summarize(task)


def held_app(rig: Rig, held: HeldSummarizer) -> DshApp:
    script = [{"text": f"answer {i} {ANSWER}"} for i in range(12)]
    return rig.app(script, window=WINDOW, auto_compact=True, pass_summarizer=held)


def prompt(i: int) -> str:
    return f"question {i} " + " ".join(["q"] * 100)


async def until_a_pass_holds_a_prompt(pilot: Any, held: HeldSummarizer) -> str:
    """Send prompts, each turn run to its end, until one's turn starts a pass (held); that
    prompt."""
    app = pilot.app
    for i in range(12):
        await submit(pilot, prompt(i))
        await settle(pilot, lambda: held.calls > 0 or not app.running)
        if held.calls:
            await settle(pilot, lambda: app.controller.progress.running)
            await pilot.pause()
            return prompt(i)
        await settle(pilot, lambda: status_at_rest(app))
    raise AssertionError("no pass started")


def prompts_logged(app: DshApp) -> list[str]:
    return [
        e.data.text()
        for e in logged(app)
        if isinstance(e, UserMessageEvent) and isinstance(e.data.source, UserSource)
    ]


def test_the_prompt_shows_at_once_marked_while_the_pass_runs_then_takes_its_logged_place(rig: Rig):
    held = HeldSummarizer()
    app = held_app(rig, held)

    async def body(pilot: Any) -> None:
        sent = await until_a_pass_holds_a_prompt(pilot, held)
        assert sent.strip() not in prompts_logged(app)  # the pass runs before it is logged
        lines = lines_of(app)
        assert lines[-1] == "" and lines[-2] == f"  ⋯ {WAITING_FOR_PASS}"
        assert "\n".join(lines[-5:-2]).startswith(f"❯ {sent.split()[0]} {sent.split()[1]}")
        status = app.status_bar.info
        assert (status.compaction, status.busy) == ("compacting…", "working…")
        held.release.set()
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        await pilot.pause()
        assert prompts_logged(app)[-1] == sent
        shown = text_of(app)
        assert WAITING_FOR_PASS not in shown
        assert shown.count(f"❯ question {sent.split()[1]} ") == 1  # shown once: logged
        assert "earlier context was compacted" in shown
        assert app.status_bar.info.compaction is None

    run(app, body)


def test_a_prompt_waiting_for_a_pass_snapshot(snap_compare, rig: Rig):
    held = HeldSummarizer()
    app = held_app(rig, held)

    async def waiting(pilot: Any) -> None:
        await until_a_pass_holds_a_prompt(pilot, held)
        await settle(pilot, lambda: status_at_rest(app))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=waiting)


def test_a_pass_that_fails_says_so_and_its_prompt_goes_on_to_the_model(rig: Rig):
    held = HeldSummarizer(fails=True)
    app = held_app(rig, held)

    async def body(pilot: Any) -> None:
        sent = await until_a_pass_holds_a_prompt(pilot, held)
        held.release.set()
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        await pilot.pause()
        assert prompts_logged(app)[-1] == sent
        (end,) = [e for e in logged(app) if isinstance(e, CompactionEndEvent)]
        note = "Compaction pass did not finish: summary failed: server_error: the summariser's"
        lines = lines_of(app)
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  {note}"))
        assert lines[at + 2].startswith(f"❯ question {sent.split()[1]} ")  # then the prompt
        assert end.data.error is not None and WAITING_FOR_PASS not in text_of(app)

    run(app, body)


def test_a_turn_cancelled_while_its_pass_runs_keeps_its_prompt_in_the_transcript(rig: Rig):
    held = HeldSummarizer()
    app = held_app(rig, held)

    async def body(pilot: Any) -> None:
        sent = await until_a_pass_holds_a_prompt(pilot, held)
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        await pilot.pause()
        assert prompts_logged(app)[-1] == sent  # logged, never sent to the model
        shown = text_of(app)
        assert WAITING_FOR_PASS not in shown
        assert shown.count(f"❯ question {sent.split()[1]} ") == 1
        tail = [(b.kind, b.text) for b in app.transcript.model.blocks[-3:]]
        assert tail == [
            ("note", "Compaction pass did not finish: cancelled"),
            ("user", sent),
            ("note", "Turn stopped: cancelled by the user"),
        ]
        assert app.prompt_box.text == ""  # it is in the transcript: not twice

    run(app, body)


def test_a_turn_that_ends_before_its_prompt_is_logged_puts_the_draft_back_unsent(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
):
    """The disk goes read-only while the pass runs: nothing more reaches the log, the prompt
    neither; the turn fails, and the draft is back in the box (with what was typed since)."""
    held = HeldSummarizer()
    app = held_app(rig, held)

    write = os.write

    def refused(fd: int, data: bytes) -> int:  # a session log's writes only
        if not os.readlink(f"/proc/self/fd/{fd}").endswith("session.jsonl"):
            return write(fd, data)
        raise OSError(errno.EROFS, "Read-only file system")

    async def body(pilot: Any) -> None:
        sent = await until_a_pass_holds_a_prompt(pilot, held)
        app.prompt_box.insert("typed meanwhile")
        monkeypatch.setattr("dsh.store.jsonl.os.write", refused)
        held.release.set()
        await settle(pilot, lambda: not app.running)
        monkeypatch.undo()
        await pilot.pause()
        assert sent.strip() not in prompts_logged(app)
        assert WAITING_FOR_PASS not in text_of(app)
        assert app.prompt_box.text == f"{sent}\ntyped meanwhile"
        assert "Read-only file system" in text_of(app)  # the turn's error, as a note

    run(app, body)
