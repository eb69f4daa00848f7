"""The recall tools reach the model once there is something to recall.

``history_read`` and ``history_search`` read what checkpoints shadow; before the log holds a
checkpoint they can only answer that there is none. Offering them from the first request would
cost every request of a session that never compacts their schemas and prompt section (297
tokens: 8% of a 4k local model's window) and hand a small model two tools it cannot use. So the
next request carries them, with their prompt section appended to the system prompt, from the
first ``compaction/summary`` in the log on; from then on they never change again (the spec's
byte-identical schemas and section, across every pass). The offer is a pure function of the
log, so a rebuilt or resumed request carries exactly what the logged one did.

The one pass that brings them also brings their tokens: ``tokens_to_come`` is what the next
request gains once a checkpoint lands, which the compaction engine adds to its estimate of a
pass's result (its inflation guard compares the requests that would really go out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh.compaction.base import has_checkpoint
from dsh.config import RecallSettings
from dsh.events import RequestHeaderBody
from dsh.recall import RECALL_PROMPT_SECTION, recall_tools
from dsh.surface import Session, system_tokens, tools_tokens
from dsh.tools.base import Tool, tool_spec

SECTION_SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class RecallOffer:
    """The recall tools' specs and prompt section, offered once the log holds a checkpoint."""

    specs: tuple[dict[str, Any], ...]
    section: str
    names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", _tool_names(self.specs))

    def header(self, session: Session, header: RequestHeaderBody) -> RequestHeaderBody:
        """``header`` (the registry's every tool, the base system prompt) as the next request of
        ``session`` carries it: without the recall tools until a checkpoint exists, else with
        them last and the section after the system prompt."""
        if has_checkpoint(session):
            return self.offered(header)
        tools = tuple(t for t in header.tools or () if str(t.get("name")) not in self.names)
        return RequestHeaderBody(config=header.config, system=header.system, tools=tools or None)

    def offered(self, header: RequestHeaderBody) -> RequestHeaderBody:
        """``header`` as a request carries it once the recall tools are offered: them last,
        the section after the system prompt (what the room rules of ``dsh.agent.room``
        price, whether or not a checkpoint exists yet)."""
        tools = tuple(t for t in header.tools or () if str(t.get("name")) not in self.names)
        return RequestHeaderBody(
            config=header.config,
            system=with_section(header.system, self.section),
            tools=tools + self.specs,
        )

    def tokens_to_come(self, session: Session) -> int:
        """What the next request gains when a pass lands now: the recall tools and section if
        the latest logged header lacks them, else 0 (no header yet: nothing to compare)."""
        logged = session.request_header
        if logged is None or self.names <= _tool_names(logged.tools or ()):
            return 0
        tools = tuple(logged.tools or ())
        return (
            tools_tokens(tools + self.specs)
            - tools_tokens(tools)
            + system_tokens(with_section(logged.system, self.section))
            - system_tokens(logged.system)
        )


def recall_offer(
    settings: RecallSettings, *, span_dir: Path | None = None
) -> tuple[list[Tool], RecallOffer]:
    """The two recall tools (for the registry: they run whenever called) and their offer."""
    tools = recall_tools(settings, span_dir=span_dir)
    return tools, RecallOffer(tuple(tool_spec(tool) for tool in tools), RECALL_PROMPT_SECTION)


def with_section(system: str | None, section: str) -> str:
    return section if not system else system + SECTION_SEPARATOR + section


def _tool_names(tools: tuple[dict[str, Any], ...]) -> frozenset[str]:
    return frozenset(str(tool.get("name")) for tool in tools)
