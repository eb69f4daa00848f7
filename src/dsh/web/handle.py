"""One session open for writing in the web server: its ``Handle`` translates the session's
runner to frames for the session's live stream and holds the approvals the page has yet to
answer (``PendingApproval``). The registry (``dsh.web.sessions``) makes, keeps and releases
handles."""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from dsh.agent.context_fold import ContextFold
from dsh.agent.live_text import stream_delta
from dsh.agent.session_runner import Activity, SessionRunner
from dsh.agent.tool_progress import RUNNING_OUTPUT, Lines
from dsh.surface import Session
from dsh.tools.approval import ASKED_CALL, ApprovalAnswer, DenyWithReason, always_label
from dsh.tools.planned_change import PlannedChange, planned_change
from dsh.web.live import LiveHub, Streamed, frame
from dsh.web.runtime import Runtime


@dataclass(slots=True)
class PendingApproval:
    id: str
    tool: str
    args: dict[str, Any]
    future: asyncio.Future[ApprovalAnswer]
    change: PlannedChange | None = None
    """A file-writing call's change against the file as it is (the page cannot read it)."""
    protected: str | None = None
    """Why this call is asked every time (a write to ``.dsh/`` or ``.git/``): the page offers
    no "always" for it (no ``alwaysLabel``), and the server takes none."""
    call_id: str | None = None
    """The id of the tool call asked about (``callId``): the page marks that call's card."""

    @property
    def diff(self) -> list[str] | None:
        change = self.change
        return None if change is None or change.lines is None else list(change.lines)

    def public(self) -> dict[str, Any]:
        """The approval as the page gets it: ``diff`` the file's diff lines, ``fails`` why the
        call would fail (no diff then), ``note`` what the diff is when not the file's;
        ``protected`` why it is asked every time (then no ``alwaysLabel``)."""
        shown: dict[str, Any] = {"id": self.id, "tool": self.tool, "args": _jsonable(self.args)}
        shown["callId"] = self.call_id
        if self.protected is None:
            shown["alwaysLabel"] = always_label(self.tool)
        else:
            shown["protected"] = self.protected
        change = self.change
        if change is not None:
            extra = {"diff": self.diff, "fails": change.fails, "note": change.note}
            shown.update((key, value) for key, value in extra.items() if value is not None)
        return shown


class Handle:
    """A session open for writing in this server: its runner, translated to frames."""

    def __init__(
        self, session: Session, hub: LiveHub, runtime: Runtime, *, draft: bool = False
    ) -> None:
        self.runner = SessionRunner(
            session, runtime, approver=self._approve, on_stream=self._stream
        )
        self.session = session
        self.draft = draft
        """A new session not in the store yet: its first prompt writes it (``dsh.web.drafts``)."""
        self.hub = hub
        self.approvals: dict[str, PendingApproval] = {}
        self.context = ContextFold()
        """The context panel's and the session info's view of the log, kept as it grows."""
        self.streamed = Streamed()
        """What the running model call streamed so far, for a page that joins during it."""
        self.watchers = [
            self.runner.subscribe(hub.on_event),
            self.runner.subscribe(self.streamed.heard),
            RUNNING_OUTPUT.watch(self._printed),
        ]

    @property
    def activity(self) -> Activity | None:
        return self.runner.activity

    def _stream(self, event: Any) -> None:
        """A delta (``stream_delta``, the rule the side file another process follows keeps
        too) to the pages, and kept for one that joins during the call."""
        delta = stream_delta(event)
        if delta is not None:
            self.streamed.add(*delta)
            self.hub.publish(frame("delta", channel=delta[0], text=delta[1]))

    def _printed(self, session_id: str, lines: dict[int, Lines]) -> None:
        """Running tool calls printed (``dsh.agent.tool_progress``): their cards' ``tail``."""
        if session_id == self.session.id:
            for seq, shown in lines.items():
                self.hub.publish(frame("tail", seq=seq, lines=list(shown)))

    def joined(self) -> tuple[int, list[str]]:
        """For a page joining now: the seq of the last event logged and what the running call
        streamed after it, and the last lines each running tool call printed (all as of now:
        the page's subscription is made with them)."""
        printed = RUNNING_OUTPUT.lines(self.session.id).items()
        tails = [frame("tail", seq=seq, lines=list(shown)) for seq, shown in printed]
        return len(self.session.events) - 1, self.streamed.frames() + tails

    async def _approve(
        self, tool: str, args: dict[str, Any], protected: str | None
    ) -> ApprovalAnswer:
        future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
        workspace = Path(self.session.header.cwd)  # where the runner's tools run
        change = await anyio.to_thread.run_sync(planned_change, tool, args, workspace)
        pending = PendingApproval(
            secrets.token_hex(6), tool, args, future, change, protected, ASKED_CALL.get()
        )
        self.approvals[pending.id] = pending
        self.hub.publish(frame("approval", approval=pending.public()))
        outcome = "cancelled"
        try:
            answer = await future
            outcome = "deny" if isinstance(answer, DenyWithReason) else answer
            return answer
        finally:
            self.approvals.pop(pending.id, None)
            self.hub.publish(frame("approval-resolved", id=pending.id, answer=outcome))


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
