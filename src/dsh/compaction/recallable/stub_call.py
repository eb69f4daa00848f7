"""One index stub from the summariser: a junk answer is asked for once more, then (like a failed
call) the stub degrades to a code pointer stub and the pass goes on."""

from __future__ import annotations

import logging

from dsh.compaction.base import RegionPlan, RegionText
from dsh.compaction.recallable.ranking import CompletedRegions
from dsh.compaction.recallable.texts import junk_reason, pointer, stub_text
from dsh.compaction.summarizer import Summarizer

log = logging.getLogger("dsh.compaction")

STUB_ATTEMPTS = 2
"""A junk stub answer is asked for once more before the stub degrades to a pointer."""


async def model_stub(
    summarizer: Summarizer,
    region: RegionPlan,
    completed: CompletedRegions,
    index: int,
    stub_tokens: int,
) -> RegionText:
    """The model's stub for ``region`` (the pass's ``index``-th); its text is written into the
    ranked region (``completed``), awaited once an answer is in."""
    task = region.task
    assert task is not None
    for _ in range(STUB_ATTEMPTS):
        try:
            output = await summarizer.summarize(task)
        except Exception:
            break
        reason = junk_reason(output.text.strip(), task.messages, stub_tokens)
        if reason is None:
            return stub_text((await completed())[index], output)
        log.info("stub answer rejected (%s)", reason)
    return pointer((await completed())[index], "fallback", None)
