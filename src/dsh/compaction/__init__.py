"""Compaction: the engine both backends share, the backends, the pruner and the summarisers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from dsh.compaction.base import (
    CompactionBackend,
    CompactionBusy,
    CompactionError,
    CompactionRefused,
    PassResult,
    Plan,
    RegionPlan,
    RegionText,
    StandingAfterPass,
)
from dsh.compaction.basic import BasicBackend
from dsh.compaction.commands import (
    COMPACT_CANCELLED,
    NOTHING_TO_COMPACT,
    nothing_answer,
    nothing_to_compact,
    run_compact_command,
)
from dsh.compaction.engine import CompactionEngine
from dsh.compaction.extractive import ExtractiveSummarizer
from dsh.compaction.model_summarizer import ModelSummarizer, build_summary_request
from dsh.compaction.pruner import prune_tool_results
from dsh.compaction.recallable import RecallableBackend
from dsh.compaction.summarizer import CountedSummarizer, Summarizer, SummaryOutput, SummaryTask
from dsh.config import CompactionSettings
from dsh.errors import ConfigError
from dsh.events import Event
from dsh.llm.types import Provider


def make_summarizer(
    settings: CompactionSettings,
    provider: Provider | None,
    model: str | None,
    *,
    history: Sequence[Event] = (),
    on_call: Callable[[], None] | None = None,
    max_output_tokens: int | None = None,
) -> Summarizer:
    """``extractive`` (keyless) or a model name served by the conversation's provider;
    ``on_call`` hears of each finished summary call; ``max_output_tokens`` bounds one call's
    answer (default: the model's known limit)."""
    summarizer = _make_summarizer(
        settings, provider, model, history=history, max_output_tokens=max_output_tokens
    )
    return summarizer if on_call is None else CountedSummarizer(summarizer, on_call)


def _make_summarizer(
    settings: CompactionSettings,
    provider: Provider | None,
    model: str | None,
    *,
    history: Sequence[Event],
    max_output_tokens: int | None,
) -> Summarizer:
    if settings.summarizer == "extractive":
        return ExtractiveSummarizer()
    if provider is None:
        raise ConfigError(
            f"compaction.summarizer {settings.summarizer!r} needs a provider; "
            "use --summarizer extractive to compact without one"
        )
    return ModelSummarizer(
        provider,
        model or settings.summarizer,
        history=history,
        timeout_s=settings.summarizer_timeout_s,
        context_window=settings.summarizer_context_window,
        max_output_tokens=max_output_tokens,
    )


def make_backend(
    settings: CompactionSettings,
    summarizer: Summarizer,
    *,
    standing_after_pass: StandingAfterPass | None = None,
    anchor_file: Callable[[str], Path] | None = None,
) -> CompactionBackend | None:
    """The configured backend, or None for ``off``; ``standing_after_pass``: see
    ``CompactionEngine``; ``anchor_file``: where the recallable backend keeps a session's
    anchor index between processes (None: it builds it in memory)."""
    if settings.backend == "off":
        return None
    if settings.backend == "basic":
        return BasicBackend(summarizer, settings)
    return RecallableBackend(
        summarizer, settings, standing_after_pass=standing_after_pass, anchor_file=anchor_file
    )


__all__ = [
    "COMPACT_CANCELLED",
    "NOTHING_TO_COMPACT",
    "BasicBackend",
    "CompactionBackend",
    "CompactionBusy",
    "CompactionEngine",
    "CompactionError",
    "CompactionRefused",
    "ExtractiveSummarizer",
    "ModelSummarizer",
    "PassResult",
    "Plan",
    "RecallableBackend",
    "RegionPlan",
    "RegionText",
    "Summarizer",
    "SummaryOutput",
    "SummaryTask",
    "build_summary_request",
    "make_backend",
    "make_summarizer",
    "nothing_answer",
    "nothing_to_compact",
    "prune_tool_results",
    "run_compact_command",
]
