"""The face-neutral session runner: one activity at a time, cancel, and every ``command/run``
answered by its ``command/done`` (on success, cancellation and failure alike)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.agent.session_runner import (
    ActivityChanged,
    CompactionOff,
    SessionBusy,
    SessionRunner,
    SettingsWiring,
)
from dsh.agent.stop_signals import cancelled_by
from dsh.agent.wiring import Injection, build_parts
from dsh.compaction import CompactionEngine, ExtractiveSummarizer, SummaryOutput, SummaryTask
from dsh.config import CompactionSettings, Settings, ToolSettings
from dsh.errors import ERROR_LINE_CHARS
from dsh.events import CommandDoneEvent, CommandRunEvent, TurnEndEvent, event_type_of
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalAnswer
from tests.helpers import append_tool_turn


class Hangs:
    """A summariser that never answers (until cancelled)."""

    name = model = "hangs"

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class Breaks:
    name = model = "breaks"

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        raise RuntimeError("a bug in the summariser")


class Wiring(SettingsWiring):
    """The settings wiring with a chosen summariser and a scripted conversation."""

    def __init__(self, backend: str = "basic", summarizer: Any = None, script: Any = ()) -> None:
        settings = Settings(
            compaction=CompactionSettings(backend=backend, retain_tokens=60),  # type: ignore[arg-type]
            tools=ToolSettings(approval="auto"),
        )
        provider = ScriptedProvider(parse_script(list(script)), model="scripted")
        super().__init__(settings, lambda: Route(provider, "scripted", 8000))
        self.summarizer = summarizer or ExtractiveSummarizer()

    def make_engine(self, session: Session) -> CompactionEngine | None:
        inject = Injection(summarizer=lambda s: self.summarizer)
        return build_parts(self.settings, self.route(), session, inject=inject).engine


async def never_asked(tool: str, args: dict[str, Any], protected: str | None) -> ApprovalAnswer:
    raise AssertionError("no tool asks under auto")


def runner_for(wiring: Wiring, tmp_path: Path) -> SessionRunner:
    runner = SessionRunner.create(MemoryStore(), tmp_path, wiring, approver=never_asked)
    for i in range(6):
        append_tool_turn(runner.session, f"p{i}", calls=[("read_file", "{}", f"output {i} " * 80)])
    return runner


def commands(session: Session) -> list[tuple[str, Any]]:
    return [
        (event_type_of(e), e.data)
        for e in session.events
        if isinstance(e, CommandRunEvent | CommandDoneEvent)
    ]


def answered(session: Session) -> tuple[bool, str]:
    (run, run_data), (done, done_data) = commands(session)
    assert (run, done) == ("command/run", "command/done")
    assert done_data.command_id == run_data.command_id
    return done_data.ok, done_data.text


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0)


def test_a_compact_runs_as_the_one_activity_and_answers_its_command(tmp_path: Path):
    runner = runner_for(Wiring(), tmp_path)
    heard: list[ActivityChanged] = []
    runner.on_activity(heard.append)

    async def main() -> tuple[bool, str]:
        task = runner.start_compact(None)
        assert runner.activity == "compact"
        with pytest.raises(SessionBusy, match="a /compact is already running"):
            runner.start_turn("meanwhile")
        return await task

    ok, text = asyncio.run(main())
    assert ok and text.startswith("Compacted ")
    assert answered(runner.session) == (True, text)
    assert runner.activity is None and runner.task is None
    assert [(h.activity, h.running, h.error) for h in heard] == [
        ("compact", True, None),
        ("compact", False, None),
    ]


def test_a_cancelled_compact_answers_its_command_cancelled(tmp_path: Path):
    runner = runner_for(Wiring(summarizer=Hangs()), tmp_path)

    async def main() -> None:
        task = runner.start_compact("focus")
        await until(lambda: event_type_of(runner.session.events[-1]) == "compaction/start")
        assert runner.cancel() == "compact"
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert answered(runner.session) == (False, "Compaction cancelled.")
    ends = [e for e in runner.session.events if event_type_of(e) == "compaction/end"]
    assert [e.data.error for e in ends] == ["cancelled"]
    assert runner.activity is None


def test_a_compact_that_fails_unexpectedly_still_answers_its_command(tmp_path: Path):
    runner = runner_for(Wiring(summarizer=Breaks()), tmp_path)
    heard: list[ActivityChanged] = []
    runner.on_activity(heard.append)

    async def main() -> tuple[bool, str]:
        return await runner.start_compact(None)

    ok, text = asyncio.run(main())  # the summariser's failure is a refused pass, not a crash
    assert not ok and text.startswith("Compaction failed: summary failed")
    assert answered(runner.session) == (False, text)


def test_a_bug_in_the_command_answers_it_and_reaches_the_subscribers(tmp_path: Path):
    runner = runner_for(Wiring(), tmp_path)
    heard: list[ActivityChanged] = []
    runner.on_activity(heard.append)

    async def broken(**kwargs: Any) -> Any:
        raise KeyError("a bug")

    async def main() -> None:
        await runner.start_compact(None)

    engine = runner.wiring.make_engine(runner.session)
    assert engine is not None
    engine.compact_now = broken  # type: ignore[method-assign]
    runner.wiring.make_engine = lambda session: engine  # type: ignore[method-assign]
    with pytest.raises(KeyError):
        asyncio.run(main())
    ok, text = answered(runner.session)
    assert not ok and text == "Compaction failed: KeyError: 'a bug'"
    assert isinstance(heard[-1].error, KeyError) and not heard[-1].running


def test_an_activity_cancelled_before_it_ran_frees_the_session_and_logs_nothing(tmp_path: Path):
    runner = runner_for(Wiring(), tmp_path)
    before = len(runner.session.events)

    async def main() -> None:
        task = runner.start_compact(None)
        assert runner.cancel() == "compact"
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # done callbacks run on the next loop turn

    asyncio.run(main())
    assert runner.activity is None and len(runner.session.events) == before


def test_a_turn_is_cancelled_cooperatively_and_ends_aborted(tmp_path: Path):
    wiring = Wiring(script=[{"text": "never", "delayMs": 20_000}])
    runner = SessionRunner.create(MemoryStore(), tmp_path, wiring, approver=never_asked)

    async def main() -> Any:
        task = runner.start_turn("slow one")
        await until(lambda: runner.waiting_since is not None)
        assert runner.cancel() == "turn"
        return await task

    result = asyncio.run(main())
    assert result.reason == "aborted"
    assert event_type_of(runner.session.events[-1]) == "turn/end"
    assert runner.activity is None and runner.cancel() is None


def test_a_turn_cancelled_with_a_reason_ends_with_that_reason(tmp_path: Path):
    """A face that stops on a signal says so; the default stays the user's cancel."""
    wiring = Wiring(script=[{"text": "never", "delayMs": 20_000}] * 2)
    runner = SessionRunner.create(MemoryStore(), tmp_path, wiring, approver=never_asked)

    async def cancelled_turn(*reason: str) -> str | None:
        task = runner.start_turn("slow one")
        await until(lambda: runner.waiting_since is not None)
        assert runner.cancel(*reason) == "turn"
        return (await task).error

    hup = cancelled_by(signal.SIGHUP)
    assert asyncio.run(cancelled_turn(hup)) == hup
    assert asyncio.run(cancelled_turn()) == "cancelled by the user"
    ends = [e.data.reason.error for e in runner.session.events if isinstance(e, TurnEndEvent)]
    assert ends == [hup, "cancelled by the user"]


def test_compaction_off_is_refused_before_anything_is_logged(tmp_path: Path):
    runner = runner_for(Wiring(backend="off"), tmp_path)
    before = len(runner.session.events)

    async def main() -> None:
        with pytest.raises(CompactionOff):
            runner.start_compact(None)

    asyncio.run(main())
    assert runner.activity is None and len(runner.session.events) == before


def test_recording_keeps_the_workspace_a_cwd_run_recorded(tmp_path: Path) -> None:
    """A face that records without naming a workspace (the web, ``dsh compact``) keeps the one
    recorded (a ``--cwd`` run's), so reopening logs no workspace change."""
    from dsh.agent.session_runner import record_settings
    from dsh.events import SessionSettingsEvent

    session = Session.create(MemoryStore(), cwd=tmp_path)
    route = Route(ScriptedProvider(parse_script([])), "scripted", 8000)
    record_settings(session, Settings(), route, "/elsewhere")
    record_settings(session, Settings(), route)
    recorded = session.of_type(SessionSettingsEvent)
    assert [e.data.workspace for e in recorded] == ["/elsewhere"]
    fresh = Session.create(MemoryStore(), cwd=tmp_path)
    record_settings(fresh, Settings(), route)  # nothing recorded yet: the header's workspace
    assert [e.data.workspace for e in fresh.of_type(SessionSettingsEvent)] == [str(tmp_path)]


def test_a_turn_cancelled_after_a_model_switch_still_ends_aborted(tmp_path: Path):
    """``/model NAME`` during a turn resets the agent for the next turns; cancelling the running
    turn afterwards must still stop it cooperatively (its ``turn/end``), not kill its task."""
    wiring = Wiring(script=[{"text": "never", "delayMs": 20_000}])
    runner = SessionRunner.create(MemoryStore(), tmp_path, wiring, approver=never_asked)

    async def main() -> Any:
        task = runner.start_turn("slow one")
        await until(lambda: runner.waiting_since is not None)
        runner.reset_agent()  # the TUI's /model NAME while the turn runs
        assert runner.waiting_since is not None  # the status still says it waits
        assert runner.cancel() == "turn"
        return await task

    result = asyncio.run(main())
    assert result.reason == "aborted"
    assert event_type_of(runner.session.events[-1]) == "turn/end"
    assert runner.activity is None


def test_a_turn_cancelled_before_it_ran_is_not_run(tmp_path: Path):
    """Cancel right after start (before the task's first step): the turn must not run on as if
    no one had asked (the agent's cancel flag was made anew when the turn began)."""
    wiring = Wiring(script=[{"text": "should not be asked"}])
    runner = SessionRunner.create(MemoryStore(), tmp_path, wiring, approver=never_asked)

    async def main() -> None:
        task = runner.start_turn("never mind")
        assert runner.cancel() == "turn"
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # done callbacks run on the next loop turn

    asyncio.run(main())
    kinds = [event_type_of(e) for e in runner.session.events]
    assert "turn/start" not in kinds and "assistant/message" not in kinds
    assert runner.activity is None


def test_a_compact_failure_is_answered_in_one_bounded_escaped_line(tmp_path: Path):
    runner = runner_for(Wiring(), tmp_path)
    hostile = "\x1b[31mred\x1b[0m\nsecond line " + "x" * 2000

    async def broken(**kwargs: Any) -> Any:
        raise RuntimeError(hostile)

    engine = runner.wiring.make_engine(runner.session)
    assert engine is not None
    engine.compact_now = broken  # type: ignore[method-assign]
    runner.wiring.make_engine = lambda session: engine  # type: ignore[method-assign]

    async def main() -> None:
        await runner.start_compact(None)

    with pytest.raises(RuntimeError) as raised:
        asyncio.run(main())
    assert str(raised.value) == hostile  # the exception itself goes on whole
    ok, text = answered(runner.session)
    assert not ok and text.startswith("Compaction failed: RuntimeError: \\x1b[31mred")
    assert "\n" not in text and "\x1b" not in text and text.endswith("…")
    assert len(text) <= len("Compaction failed: ") + ERROR_LINE_CHARS


def test_a_turn_cancelled_while_its_attachments_are_read_logs_nothing_and_asks_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The files a prompt's ``@path`` mentions attach are read in a thread before the turn's
    loop begins; a cancel then must stop it (the loop, not begun yet, would have made its
    cancel flag anew and run the turn as if no one had asked)."""
    import threading

    from dsh.agent.loop import Agent

    (tmp_path / "notes.txt").write_text("the notes\n")
    wiring = Wiring(script=[{"text": "should not be asked"}])
    wiring.settings = Settings(
        compaction=wiring.settings.compaction,
        tools=ToolSettings(approval="auto", attach_mentions=True),
    )
    runner = SessionRunner.create(MemoryStore(), tmp_path, wiring, approver=never_asked)
    reading, go_on = threading.Event(), threading.Event()
    read = Agent.attachments

    def slow_read(agent: Agent, prompt: str) -> Any:
        reading.set()
        go_on.wait(10)
        return read(agent, prompt)

    monkeypatch.setattr(Agent, "attachments", slow_read)

    async def main() -> None:
        task = runner.start_turn("read @notes.txt")
        await asyncio.to_thread(reading.wait, 10)
        assert runner.cancel() == "turn"
        go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)

    asyncio.run(main())
    assert [event_type_of(e) for e in runner.session.events] == []
    assert runner.activity is None
