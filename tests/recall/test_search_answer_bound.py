"""``history_search`` answers within a size bound (docs/compaction.md, "The two recall tools").

The audit (finding 6): ``limit: 200`` on a long session answered 18,353 characters in an
8,000-token window; the pressure check pruned it to 5,189 before any request carried it, so the
model saw about 40 of the 170 hits while the header still said ``Found 170``. An answer now holds
as many hits as fit in ``read_budget_chars`` (a ``history_read`` page), and no more characters
than the session's window has tokens; it says how many it shows of how many matched and which
checkpoints hold the others.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from dsh.events import RequestContext
from dsh.recall import HistorySearchTool
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.base import ToolContext
from tests.helpers import append_chat_turn, new_session
from tests.recall.builders import bracket


def _session(turns: int = 60, per_pass: int = 20) -> Session:
    """``turns`` chat turns, prompt and reply naming ``QUOKKA``, a state per ``per_pass``."""
    session = new_session(MemoryStore())
    for first in range(0, turns, per_pass):
        for i in range(first, first + per_pass):
            append_chat_turn(session, f"note QUOKKA-{i} " + "pad " * 30, f"QUOKKA-{i} noted.")
        run = [s for s in session.nodes if session.node_message(s).role != "system"]
        run = [s for s in run if "compacted" not in session.node_message(s).text()]
        bracket(session, run, f"Pass {first}.", compaction_id=f"k{first}")
    return session


def _search(session: Session, tool: HistorySearchTool, **args: object) -> tuple[str, dict]:
    ctx = ToolContext(
        workspace=Path("/tmp"),
        session_id=session.id,
        call_id="call-1",
        history=session.events,
        history_index=session,
    )
    output = asyncio.run(tool.run(dict(args), ctx))
    return output.text, output.meta


def _hits(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[c")]


def test_a_search_with_many_hits_stops_at_the_answers_bound_and_says_where_the_rest_are():
    session = _session()
    text, meta = _search(session, HistorySearchTool(), query="quokka", limit=200)
    assert meta["matched"] == 120 and meta["truncated"] is True
    assert len(text) <= 8000
    shown = len(_hits(text))
    assert 10 < shown < 120
    assert f"Showing the first {shown} of 120, as many as fit in one answer" in text
    named = re.search(r"the other (\d+) are in (.*?): pass one of those", text)
    assert named and int(named.group(1)) == 120 - shown
    counts = [int(n) for n in re.findall(r"c\d+ \((\d+)\)", named.group(2))]
    assert sum(counts) == 120 - shown  # every hit not shown is placed
    # each checkpoint named, searched on its own, shows hits the first answer did not
    first = named.group(2).split(" (")[0]
    scoped, _ = _search(session, HistorySearchTool(), query="quokka", checkpoint=first)
    assert set(_hits(scoped)) - set(_hits(text))


def test_the_bound_is_no_larger_than_the_sessions_window():
    session = _session()
    session.append(RequestContext(provider="fake", model="fake", context_window=4096))
    text, _ = _search(session, HistorySearchTool(), query="quokka", limit=200)
    assert len(text) <= 4096 and "as many as fit in one answer" in text
    # a limit under the bound answers as before
    small, _ = _search(session, HistorySearchTool(), query="quokka", limit=3)
    assert len(_hits(small)) == 3 and "raise limit to see more" in small


def test_word_matches_stop_at_the_bound_too():
    session = _session()
    tool = HistorySearchTool(answer_chars=1500)
    text, meta = _search(session, tool, query="noted quokkas", limit=200)
    assert meta["matched"] == 0 and meta["byWords"] > 0
    assert len(text) <= 1500 and "as many as fit in one answer" in text
    assert 0 < len(_hits(text)) < 200
