"""The ``request/header`` reason: ``initial`` for a session's first header, ``resume`` for the
first request of a resumed session (its lifecycle's first), ``change`` for any later one — also
when the agent was built again on the same session (the TUI's /model, the web's route switch)."""

from __future__ import annotations

from dsh.events import RequestHeaderEvent
from dsh.surface import Session
from tests.agent.canned import of_type
from tests.agent.conftest import Harness, run


def _reasons(session: Session) -> list[str]:
    return [e.data.reason for e in of_type(session, RequestHeaderEvent)]


def _resume(harness: Harness) -> None:
    """Close the session and open it again for writing, as ``dsh --resume`` does."""
    harness.session.close()
    harness.session = Session.open(harness.store, harness.session.id, writable=True)


def test_a_resumed_sessions_first_header_says_resume_and_a_later_change_says_change(
    harness: Harness,
):
    run(harness.agent([{"text": "one"}]).run_turn("first"))
    _resume(harness)
    run(harness.agent([{"text": "two"}], model="other").run_turn("second"))
    run(harness.agent([{"text": "three"}], model="third").run_turn("third"))
    assert _reasons(harness.session) == ["initial", "resume", "change"]


def test_a_change_after_a_resumed_first_request_with_the_same_header_says_change(
    harness: Harness,
):
    run(harness.agent([{"text": "one"}]).run_turn("first"))
    _resume(harness)
    run(harness.agent([{"text": "two"}]).run_turn("second"))  # same header: none logged
    run(harness.agent([{"text": "three"}], model="other").run_turn("third"))
    assert _reasons(harness.session) == ["initial", "change"]
