"""Room in the context window (``dsh.agent.room``): a prompt no request can carry is refused
before anything is logged, one prompt limit holds whatever the window, and a window whose
fixed part (system prompt and tools as sent once the recall tools are offered) leaves a
conversation no room under the compaction threshold is refused where the agent is built."""

from __future__ import annotations

import dataclasses
import re
from fractions import Fraction
from pathlib import Path

import pytest

from dsh.agent.environment import detect
from dsh.agent.loop import Agent
from dsh.agent.prompt import system_prompt
from dsh.agent.recall_offer import recall_offer
from dsh.agent.room import (
    MAX_PROMPT_CHARS,
    fixed_tokens,
    length_problem,
    prompt_problem,
    window_problem,
)
from dsh.agent.runtime import Route
from dsh.agent.session_runner import SessionRunner
from dsh.agent.wiring import build_agent
from dsh.config import MIN_CONTEXT_WINDOW, CompactionSettings, RecallSettings, Settings
from dsh.errors import ConfigError, PromptTooLarge
from dsh.events import RequestConfig, RequestHeaderBody
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools
from tests.agent.conftest import Harness, run
from tests.compaction.test_calibrated_pressure import CountsMore


def _agent(tmp_path: Path, window: int, settings: Settings | None = None):
    session = Session.create(MemoryStore(), cwd=str(tmp_path))
    route = Route(ScriptedProvider(parse_script([{"text": "ok"}]), model="m"), "m", window)
    return build_agent(
        session,
        settings or Settings(),
        route,
        workspace=tmp_path,
        policy=ApprovalPolicy("auto"),
    )


def test_a_prompt_the_window_cannot_hold_is_refused_before_anything_is_logged(harness: Harness):
    """The audit's paste: 120 KB into an 8k window. Sent, the server refused it and recovery
    compacted the prompt itself; now the turn never starts."""
    agent = harness.agent([{"text": "never asked"}], context_window=8192, attach_mentions=True)
    before = len(harness.session.events)
    prompt = "".join(f"line {n}: héllo wörld {'x' * 100}\n" for n in range(1000))
    with pytest.raises(PromptTooLarge) as refused:
        run(agent.run_turn(prompt))
    message = str(refused.value)
    assert message.startswith("the prompt is ~31k tokens; the 8,192-token context window leaves ~")
    assert message.endswith(
        " for it beside the system prompt, tools and reply: shorten it or attach the file "
        "with @path"
    )
    assert len(harness.session.events) == before and harness.provider.requests == []


def test_the_reply_bound_and_the_recall_tools_to_come_count_against_the_prompt(
    harness: Harness,
):
    """The request must leave room for the reply it asks for (``max_tokens``) and carries the
    recall tools from the first checkpoint on: a prompt that fits only without either is
    refused even before a checkpoint exists."""
    _, offer = recall_offer(RecallSettings())
    agent = harness.agent([{"text": "ok"}], context_window=8192, recall=offer)
    fixed = fixed_tokens(agent.standing_header())
    assert fixed > fixed_tokens(agent.current_header())  # the recall tools, not yet offered
    room = 8192 - fixed - 1000
    fits = "w" * (4 * room)
    agent.config = dataclasses.replace(agent.config, params={"max_tokens": 1000})
    agent.check_prompt(fits)
    with pytest.raises(PromptTooLarge):
        agent.check_prompt(fits + "w" * 8)


def test_one_prompt_limit_holds_whatever_the_window(harness: Harness):
    agent = harness.agent([{"text": "ok"}], context_window=1_000_000)
    with pytest.raises(PromptTooLarge, match=r"^the prompt is 200,001 characters; dsh takes at"):
        agent.check_prompt("p" * (MAX_PROMPT_CHARS + 1))
    agent.check_prompt("p" * MAX_PROMPT_CHARS)
    assert length_problem("p" * (MAX_PROMPT_CHARS + 1)) == prompt_problem(
        "p" * (MAX_PROMPT_CHARS + 1), fixed=0, window=10**9, reply=0
    )
    assert "@path" not in (length_problem("p" * 200_001, attach=False) or "@path")


def test_dshs_own_fixed_part_leaves_room_at_the_smallest_window_and_not_at_2048(tmp_path):
    """``MIN_CONTEXT_WINDOW`` is the room rule applied to what every session carries: the
    system prompt (no AGENTS.md), the built-in tools and the recall tools with their section,
    at the default budgets (``tools.web_fetch`` on). Measured: about 1.7k tokens (1.6k
    before web_fetch), which a 2,048-token window (the audit's) cannot hold beside a state
    and a tail under its 1,638-token threshold."""
    tools, offer = recall_offer(RecallSettings())
    header = RequestHeaderBody(
        config=RequestConfig(provider="p", model="m"),
        system=system_prompt(tmp_path, detect(tmp_path)),
        tools=tuple(ToolRegistry([*default_tools(web_fetch=True), *tools]).specs()),
    )
    fixed = fixed_tokens(offer.offered(header))
    assert 1400 < fixed < 1800
    budgets = CompactionSettings()
    assert window_problem(fixed=fixed, window=MIN_CONTEXT_WINDOW, budgets=budgets) is None
    said = window_problem(fixed=fixed, window=2048, budgets=budgets)
    assert said is not None and "too many for a 2,048-token context window" in said
    # the margin at the bound: room for a short AGENTS.md or a few MCP tools
    room = int(MIN_CONTEXT_WINDOW * 0.8) - 204 - 655 - fixed
    assert room > 600


def test_a_window_the_fixed_part_leaves_no_room_in_is_refused_where_the_agent_is_built(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Rule: be careful. " * 700)
    with pytest.raises(ConfigError) as refused:
        _agent(tmp_path, 4096)
    message = str(refused.value)
    assert "\n" not in message and len(message) <= 300
    assert message.startswith("the system prompt and tools take ~")
    assert "too many for a 4,096-token context window" in message
    assert "compaction threshold (3,276)" in message and "AGENTS.md" in message
    assert _agent(tmp_path, 16_000).config.context_window == 16_000


def test_budgets_that_alone_reach_the_threshold_are_left_to_the_misfit_warning():
    """A reported window the budgets do not fit is said, not refused (``misfit``); the room
    rule does not refuse it a second time."""
    budgets = CompactionSettings(state_max_tokens=4096)
    assert window_problem(fixed=1600, window=4096, budgets=budgets) is None
    assert window_problem(fixed=1600, window=4096, budgets=CompactionSettings()) is None
    assert window_problem(fixed=2500, window=4096, budgets=CompactionSettings()) is not None


# ---- what @path mentions attach counts too --------------------------------------------------

BIG = "".join(f"row {n}: {'v' * 60}\n" for n in range(400))
"""About 28 KB: its note fills the attachments' share of an 8k window (about 2k tokens)."""


def _tight(harness: Harness, *, attach_mentions: bool = True) -> tuple[Agent, int]:
    """An agent in an 8k window whose reply bound leaves a short prompt ~300 tokens: room for
    the prompt's text, not for the note a big file's mention attaches."""
    agent = harness.agent([{"text": "read it"}] * 2, context_window=8192)
    fixed = fixed_tokens(agent.standing_header())
    params = {"max_tokens": 8192 - fixed - 300}
    agent.config = dataclasses.replace(agent.config, params=params, attach_mentions=attach_mentions)
    return agent, fixed


def test_a_short_prompt_whose_mention_attaches_more_than_the_window_leaves_is_refused(
    harness: Harness,
):
    """The audit's case: `summarise @big.log` passed the check (its text is a few tokens) and
    went out with a 2k-token note the window had no room for."""
    (harness.workspace / "big.log").write_text(BIG)
    agent, _ = _tight(harness)
    before = len(harness.session.events)
    with pytest.raises(PromptTooLarge) as refused:
        run(agent.run_turn("summarise @big.log please"))
    message = str(refused.value)
    assert "\n" not in message
    assert re.fullmatch(
        r"the prompt and what it attaches \(@big\.log ~2\.\dk\) are ~2\.\dk tokens; the 8,192-token"
        r" context window leaves ~300 for them beside the system prompt, tools and reply: "
        r"shorten it or mention fewer or smaller files",
        message,
    ), message
    assert len(harness.session.events) == before and harness.provider.requests == []


def test_the_same_prompt_goes_when_mentions_attach_nothing_or_the_file_is_small(
    harness: Harness,
):
    (harness.workspace / "big.log").write_text(BIG)
    (harness.workspace / "small.log").write_text("one line\n")
    agent, _ = _tight(harness, attach_mentions=False)
    assert run(agent.run_turn("summarise @big.log please")).reason == "completed"
    agent, _ = _tight(harness)
    result = run(agent.run_turn("summarise @small.log please"))
    assert result.reason == "completed", result.error
    note = harness.provider.requests[-1].messages[-1].text()
    assert "1\tone line" in note


def test_the_refusal_names_the_largest_attachments_first_and_counts_the_rest(
    harness: Harness,
):
    for name, rows in (("a.log", 10), ("b.log", 40), ("c.log", 20), ("d.log", 5)):
        (harness.workspace / name).write_text("".join(f"r{n} {'v' * 60}\n" for n in range(rows)))
    agent, _ = _tight(harness)
    with pytest.raises(PromptTooLarge) as refused:
        agent.check_prompt("look", agent.attachments("@a.log @b.log @c.log @d.log"))
    message = str(refused.value)
    assert re.search(r"\(@b\.log ~6\d\d, @c\.log ~3\d\d, @a\.log ~1\d\d and 1 more\)", message)


def test_a_turn_sends_the_attachments_it_was_checked_with(harness: Harness):
    """Read once: what a face read and checked (``SessionRunner.read_attachments``) is what the
    turn sends, though the file changed between the check and the turn."""
    (harness.workspace / "notes.md").write_text("as checked\n")
    runner = SessionRunner(harness.session, _Wired(harness), approver=_never)

    async def body() -> None:
        attached = await runner.read_attachments("what do @notes.md say?")
        (harness.workspace / "notes.md").write_text("changed since\n")
        await runner.start_turn("what do @notes.md say?", attached)

    run(body())
    note = harness.provider.requests[-1].messages[-1].text()
    assert "1\tas checked" in note and "changed since" not in note


class _Wired:
    def __init__(self, harness: Harness) -> None:
        self.harness = harness

    def make_agent(self, session: Session, **_: object) -> Agent:
        return self.harness.agent([{"text": "they say so"}], attach_mentions=True)

    def make_engine(self, session: Session) -> None:
        return None

    def compact_window(self, session: Session) -> int:
        return 128_000


async def _never(*_: object) -> bool:
    raise AssertionError("no tool call expected")


def test_a_prompt_is_counted_as_the_server_counted_the_last_request(harness: Harness):
    """After a server counted the last request twice the heuristic, a prompt the heuristic
    alone would let through (sent, the server would refuse it) is refused before anything is
    logged, its size said as the server would count it."""
    agent = harness.agent([{"text": "ok"}, {"text": "never asked"}], context_window=8192)
    agent.provider = CountsMore(harness.provider, Fraction(2))
    assert run(agent.run_turn("hello")).reason == "completed"
    calibration = harness.session.measure().calibration
    assert calibration is not None and calibration.ratio == 2
    prompt = "word " * 3_200  # ~4k tokens by the heuristic
    fixed = fixed_tokens(agent.standing_header())
    assert prompt_problem(prompt, fixed=fixed, window=8192, reply=0) is None  # uncalibrated
    before = len(harness.session.events)
    with pytest.raises(PromptTooLarge) as refused:
        run(agent.run_turn(prompt))
    assert str(refused.value).startswith("the prompt is ~8k tokens; the 8,192-token context")
    assert len(harness.session.events) == before
