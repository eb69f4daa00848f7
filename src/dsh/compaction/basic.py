"""The basic backend: one summary of everything from the surface head to the retain boundary.

It is the reference twin the recallable backend is measured against: every pass re-summarises
the previous checkpoint together with the newer history (docs/compaction.md, "The basic
backend"). The prompt the open turn answers is never in it (``dsh.compaction.open_prompt``):
when the run reaches past that prompt, the history before it and the turn's exchanges after it
are two summaries, the prompt standing verbatim between them."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.compaction.base import Plan, Reason, RegionPlan, RegionText, checkpoint_message
from dsh.compaction.open_prompt import split_at_prompt
from dsh.compaction.prompts import frame_summary, without_frame_tags
from dsh.compaction.pruner import unsent_prunes
from dsh.compaction.summarizer import Summarizer, SummaryTask, within_bound
from dsh.config import CompactionSettings
from dsh.errors import ProviderError
from dsh.events import is_checkpoint_event
from dsh.surface import Session, checkpoint_summary_text, message_tokens, retain_boundary


class BasicBackend:
    name = "basic"

    def __init__(self, summarizer: Summarizer, settings: CompactionSettings) -> None:
        self.summarizer = summarizer
        self.settings = settings

    def plan(
        self,
        session: Session,
        *,
        retain_tokens: int,
        focus: str | None,
        reason: Reason,
        window: int | None = None,
    ) -> Plan | None:
        split = split_at_prompt(session, 0, retain_boundary(session, retain_tokens))
        # the last request was refused on overflow: nothing of it is cached, and its results
        # as sent are what did not fit
        as_sent = reason != "overflow"
        regions = [
            self._region(session, run, focus, as_sent=as_sent, lead=lead)
            for run, lead in ((split.before, ()), (split.after, split.held))
            if _compactable(session, run)
        ]
        return Plan(tuple(regions)) if regions else None

    def _region(
        self,
        session: Session,
        shadowed: Sequence[int],
        focus: str | None,
        *,
        as_sent: bool,
        lead: Sequence[int] = (),
    ) -> RegionPlan:
        """One summary of ``shadowed``; ``lead`` (the open turn's prompt and attachments, kept on
        the surface before a run of the turn's own exchanges) goes first in the summariser's
        input, as what those exchanges answer."""
        previous = [
            text
            for seq in shadowed
            if is_checkpoint_event(session.events[seq])
            and (text := checkpoint_summary_text(session, seq)) is not None
        ]
        header = session.request_header
        unsent = unsent_prunes(session) if as_sent else {}  # the call extends the last request
        read = (*lead, *shadowed)
        messages = [
            message
            for seq in read
            if (message := session.node_message(unsent.get(seq, seq))) is not None
        ]
        task = SummaryTask(
            kind="summary",
            messages=tuple(messages),
            max_tokens=within_bound(self.settings.state_max, self.summarizer),
            system=header.system if header is not None else None,
            tools=tuple(header.tools or ()) if header is not None else (),
            previous="\n\n".join(previous) or None,
            focus=focus,
        )
        framing = message_tokens(checkpoint_message(frame_summary("")))
        return RegionPlan(
            kind="state",
            shadowed_seqs=tuple(shadowed),
            task=task,
            estimate_tokens=framing + task.max_tokens,
            min_tokens=framing + 1,
        )

    async def summarize(self, plan: Plan) -> list[RegionText]:
        texts = []
        for region in plan.regions:
            assert region.task is not None
            output = await self.summarizer.summarize(region.task)
            summary = without_frame_tags(output.text)
            if not summary:
                raise ProviderError("INVALID_RESPONSE", "the summariser returned no text")
            texts.append(
                RegionText(
                    kind=region.kind,
                    shadowed_seqs=region.shadowed_seqs,
                    summary=summary,
                    provider=output.provider,
                    model=output.model,
                    usage=output.usage,
                    raw_output=output.raw_output,
                )
            )
        return texts

    def checkpoint_text(self, session: Session, region: RegionText, summary_seq: int) -> str:
        return frame_summary(region.summary)


def _compactable(session: Session, run: Sequence[int]) -> bool:
    """Whether a pass has anything to do with ``run``: not nothing, nor only the previous
    checkpoint."""
    return bool(run) and not (len(run) == 1 and is_checkpoint_event(session.events[run[0]]))
