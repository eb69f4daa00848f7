"""The composition root: one place builds the engine, hooks, tools, window and summariser."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from dsh.agent.runtime import Route
from dsh.agent.wiring import Injection, build_parts
from dsh.compaction import (
    CompactionRefused,
    ExtractiveSummarizer,
    ModelSummarizer,
    SummaryOutput,
    SummaryTask,
)
from dsh.compaction.engine import PassOutcome
from dsh.config import (
    DEFAULT_CONTEXT_WINDOW,
    CompactionOverride,
    CompactionSettings,
    ProviderOverride,
    ProviderSettings,
    Settings,
    dsh_home,
)
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.recall import RECALL_PROMPT_SECTION
from dsh.store import MemoryStore, anchor_cache_path
from dsh.surface import Session
from tests.agent.conftest import run
from tests.helpers import append_tool_turn

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def tracked_sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def route(window: int | None = 8000, model: str = "scripted") -> Route:
    return Route(ScriptedProvider(parse_script([]), model=model), model, window)


def session() -> Session:
    return Session.create(MemoryStore(), cwd="/w")


def settings(**compaction: object) -> Settings:
    return Settings(compaction=CompactionSettings(**compaction))  # type: ignore[arg-type]


def test_the_engine_is_constructed_in_one_module_of_src():
    constructing = {
        str(path.relative_to(SRC))
        for path in tracked_sources()
        if re.search(r"\bCompactionEngine\(", path.read_text(encoding="utf-8"))
    }
    assert constructing == {"dsh/agent/wiring.py"}


def test_the_default_window_is_defined_once_and_not_aliased():
    defining = [
        str(path.relative_to(SRC))
        for path in tracked_sources()
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"\s*\w*WINDOW\w*\s*=\s*(128_000|DEFAULT_CONTEXT_WINDOW)\b", line)
    ]
    assert defining == ["dsh/config/sections.py"]


def test_the_recall_tools_and_their_section_come_only_with_the_recallable_backend():
    recallable = build_parts(settings(backend="recallable"), route(), session())
    basic = build_parts(settings(backend="basic"), route(), session())
    assert {"history_read", "history_search"} <= set(recallable.tools.names)
    assert recallable.recall is not None and recallable.recall.section == RECALL_PROMPT_SECTION
    assert recallable.recall.names == {"history_read", "history_search"}
    assert not {"history_read", "history_search"} & set(basic.tools.names)
    assert basic.recall is None
    control = build_parts(
        settings(backend="basic"), route(), session(), inject=Injection(offer_recall=True)
    )
    assert control.recall is not None and control.recall.section == RECALL_PROMPT_SECTION


def test_compaction_off_builds_no_engine_and_no_hooks():
    parts = build_parts(settings(backend="off"), route(), session())
    assert parts.engine is None and parts.hooks == () and parts.overflow is None


@pytest.mark.parametrize(("window", "expected"), [(8000, 8000), (None, DEFAULT_CONTEXT_WINDOW)])
def test_the_window_is_the_routes_else_the_default(window, expected):
    assert build_parts(settings(), route(window), session()).window == expected


def test_the_budgets_are_the_routes_override_and_the_summariser_the_configured_model():
    configured = settings(
        summarizer="cheap-summary-model",
        chunk_tokens=4000,
        overrides={"scripted:tiny": CompactionOverride(chunk_tokens=1200)},
    )
    parts = build_parts(configured, route(model="tiny"), session())
    assert parts.compaction.chunk_tokens == 1200
    assert parts.engine is not None and parts.engine.settings.chunk_tokens == 1200
    assert isinstance(parts.summarizer, ModelSummarizer)
    assert parts.summarizer.route == ("scripted", "cheap-summary-model")


def test_the_summarisers_own_route_override_bounds_one_summariser_call():
    """``[provider.overrides."<summariser route>"] max_output_tokens`` reaches the summariser,
    so a slow local summariser's one-call pass can be split into smaller calls; the
    conversation's own bound does not apply to it."""
    bounded = Settings(
        provider=ProviderSettings(
            max_output_tokens=4096,
            overrides={"scripted:local-summary-model": ProviderOverride(max_output_tokens=900)},
        ),
        compaction=CompactionSettings(summarizer="local-summary-model"),
    )
    parts = build_parts(bounded, route(model="tiny"), session())
    assert isinstance(parts.summarizer, ModelSummarizer)
    assert parts.summarizer.max_output_tokens == 900
    unbounded = msgspec.structs.replace(bounded, provider=ProviderSettings(max_output_tokens=4096))
    parts = build_parts(unbounded, route(model="tiny"), session())
    assert isinstance(parts.summarizer, ModelSummarizer)
    assert parts.summarizer.max_output_tokens != 4096  # the model's known limit, or none


def test_a_summariser_on_the_conversations_route_keeps_the_conversations_output_bound():
    """When the summariser is the conversation's own route, ``[provider] max_output_tokens``
    (with that route's override applied) bounds its calls as it bounds the conversation's."""
    same_route = Settings(
        provider=ProviderSettings(max_output_tokens=700),
        compaction=CompactionSettings(summarizer="tiny"),
    )
    parts = build_parts(same_route, route(model="tiny"), session())
    assert isinstance(parts.summarizer, ModelSummarizer)
    assert parts.summarizer.route == ("scripted", "tiny")
    assert parts.summarizer.max_output_tokens == 700
    overridden = msgspec.structs.replace(
        same_route,
        provider=ProviderSettings(
            max_output_tokens=700,
            overrides={"scripted:tiny": ProviderOverride(max_output_tokens=500)},
        ),
    )
    parts = build_parts(overridden, route(model="tiny"), session())
    assert isinstance(parts.summarizer, ModelSummarizer)
    assert parts.summarizer.max_output_tokens == 500


class Wordy:
    """A summariser whose summaries are longer than what they replace."""

    name = model = "wordy"

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        return SummaryOutput(text="so many words " * 4000, provider="wordy", model="wordy")


def long_session() -> Session:
    live = session()
    for i in range(6):
        append_tool_turn(live, f"p{i}", calls=[("read_file", "{}", f"output {i} " * 80)])
    return live


def test_the_injected_summariser_and_pass_observer_are_the_ones_used():
    heard: list[PassOutcome] = []
    chosen = ExtractiveSummarizer()
    basic = settings(backend="basic", retain_tokens=60)
    parts = build_parts(
        basic,
        route(),
        long_session(),
        inject=Injection(summarizer=lambda s: chosen, on_pass=heard.append, new_id=lambda: "p1"),
    )
    assert parts.summarizer is chosen and parts.engine is not None
    result = run(parts.engine.compact_now(window=8000))
    assert result is not None and result.pass_id == "p1"
    assert [(o.result, o.error) for o in heard] == [(result, None)]

    wordy = build_parts(
        basic,
        route(),
        long_session(),
        inject=Injection(summarizer=lambda s: Wordy(), on_pass=heard.append),
    )
    assert wordy.engine is not None
    with pytest.raises(CompactionRefused, match="inflation guard"):
        run(wordy.engine.compact_now(window=8000))
    assert isinstance(heard[-1].error, CompactionRefused) and heard[-1].result is None


@pytest.mark.parametrize("derived_files", [True, False], ids=["a-face", "the-bench"])
def test_a_recallable_pass_keeps_the_anchor_index_in_the_home_unless_told_not_to(derived_files):
    live = long_session()
    parts = build_parts(
        settings(backend="recallable", retain_tokens=60),
        route(),
        live,
        inject=Injection(summarizer=lambda s: ExtractiveSummarizer(), derived_files=derived_files),
    )
    assert parts.engine is not None
    assert run(parts.engine.compact_now(window=8000)) is not None
    stored = anchor_cache_path(dsh_home(), live.id)
    assert stored.exists() is derived_files
