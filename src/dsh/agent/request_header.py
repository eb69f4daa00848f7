"""The ``request/header`` a model call goes out with: logged only when it changed, with why.

The reason is read from the log, not from the agent object, so an agent built again on the same
session (the TUI's ``/model``, the web's route switch) labels a change ``change``: ``initial``
when the log holds no header yet, ``resume`` for the first request of a resumed session (no
header, reply or failed call since its latest ``session/end-seed``), else ``change``.
"""

from __future__ import annotations

from typing import Literal

from dsh.events import (
    AssistantMessageEvent,
    RequestErrorEvent,
    RequestHeader,
    RequestHeaderBody,
    RequestHeaderEvent,
    SessionEndSeedEvent,
    encode_json,
)
from dsh.surface import Session

HeaderReason = Literal["initial", "resume", "change"]


def header_reason(session: Session) -> HeaderReason:
    """Why a header logged now is new (see the module docstring)."""
    if session.request_header is None:
        return "initial"
    if not session.lifecycle_started:  # resumed, nothing written yet: the seed comes first
        return "resume"
    seeds = session.of_type(SessionEndSeedEvent)
    if not seeds:
        return "change"
    requested = (RequestHeaderEvent, AssistantMessageEvent, RequestErrorEvent)
    latest = max((e[-1].seq for kind in requested if (e := session.of_type(kind))), default=-1)
    return "resume" if latest < seeds[-1].seq else "change"


def log_header_if_changed(session: Session, header: RequestHeaderBody) -> None:
    """Append ``request/header`` unless the latest logged one is ``header`` already."""
    logged = session.request_header
    if logged is None or encode_json(logged) != encode_json(header):
        session.append(RequestHeader(header=header, reason=header_reason(session)))
