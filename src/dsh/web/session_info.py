"""The session info (``GET /api/sessions/{id}``, the ``hello`` of a session's live stream, the
answer to a resume or a create): everything the page's header needs about one session, open
here or read from the store, and the ``stats`` figures its ``stats`` frames carry; ``plan``,
the todo list the page pins over its composer (``public_plan``).

Its context use is measured against the window the session's next turn here runs in
(``dsh.web.next_route``: resolved off the loop before the info is made, then kept), not only the
one its log names: a session reopened on a server whose flags or config give it another window
shows that window at once, not after its next turn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh.agent.context_fold import ContextFold
from dsh.agent.spend import public_spend
from dsh.agent.wiring import session_window
from dsh.events import TodoWriteEvent
from dsh.store import SessionHeader
from dsh.surface import Session
from dsh.transcript.plan import current_plan
from dsh.web.figures import against_window, session_figures, title_of
from dsh.web.handle import Handle
from dsh.web.next_route import Planned, next_route, settled

if TYPE_CHECKING:
    from dsh.web.sessions import SessionRegistry


async def session_info(registry: SessionRegistry, session_id: str) -> dict[str, Any]:
    """The info of ``session_id`` (404 for an unknown one)."""
    handle = registry.handles.get(session_id)
    if handle is not None:
        await next_route(registry, session_id)  # kept: its figures take it
        handle = registry.handles.get(session_id)  # closed meanwhile?
    if handle is not None:
        session = handle.session
        return {
            **registry.summary(session.header),
            "title": title_of(session),
            "lastSeq": len(session.events) - 1,
            "stats": open_figures(registry, handle),
            "plan": public_plan(session),
            "progress": handle.hub.progress.public(),
            "approvals": [a.public() for a in handle.approvals.values()],
            "approval": await registry.approval(session.id, session.header.cwd),
            "draft": handle.draft,
        }

    def stored_info(session: Session) -> tuple[SessionHeader, dict[str, Any], Planned]:
        # a new load's first update reads the whole index: off the loop
        planned = registry.next_routes.plan(session)
        with registry.stored_context.held(session_id) as fold:
            stats = figures(registry, session, fold.update(session, items=False))
        shown = {
            "title": title_of(session),
            "lastSeq": len(session.events) - 1,
            "stats": stats,
            "plan": public_plan(session),
        }
        return session.header, shown, planned

    header, shown, planned = await registry.stored(session_id, stored_info)
    if callable(planned):  # its next route, not known yet: resolved apart (it may ask a server)
        upcoming = await settled(planned)
        if upcoming is not None:
            shown["stats"] = against_window(shown["stats"], session_window(upcoming))
    fixed: dict[str, Any] = {"progress": None, "approvals": [], "draft": False}
    approval = await registry.approval(session_id, header.cwd)
    return {**registry.summary(header), **shown, **fixed, "approval": approval}


def public_plan(session: Session) -> list[dict[str, str]]:
    """The session's pinned plan (``dsh.transcript.plan``): its latest todo list, as the page
    shows it (``static/plan.js``)."""
    todos = current_plan(session.of_type(TodoWriteEvent))
    return [{"content": todo.content, "status": todo.status} for todo in todos]


def open_figures(registry: SessionRegistry, handle: Handle) -> dict[str, Any]:
    """The info's figures of a session open here, from its handle's ``ContextFold``."""
    return figures(registry, handle.session, handle.context.update(handle.session, items=False))


def figures(registry: SessionRegistry, session: Session, fold: ContextFold) -> dict[str, Any]:
    """``session_figures`` of ``fold`` (up to date) against the window of the session's next
    turn when it is known, with its spend so far (``/cost``'s figure: ``dsh.agent.spend``)."""
    upcoming = registry.next_routes.kept(session)
    shown = session_figures(session, fold.stats, registry.runtime.default_window(), upcoming)
    return {**shown, "spend": public_spend(fold.bills.report())}
