"""``Session.append`` returns the payload's own event class, and the node accessor reads a
surface event (current or shadowed) without a cast."""

from __future__ import annotations

import typing

import pytest

from dsh.errors import SurfaceError
from dsh.events import (
    EVENT_CLASS_BY_PAYLOAD,
    AssistantMessageEvent,
    Payload,
    TurnStart,
    TurnStartEvent,
    UserMessageEvent,
)
from dsh.store import MemoryStore
from tests.helpers import append_chat_turn, new_session, replace_with_checkpoint, user_message


def test_every_payload_names_in_its_type_the_event_class_the_session_wraps_it_in():
    for payload, event_class in EVENT_CLASS_BY_PAYLOAD.items():
        assert issubclass(payload, Payload), payload
        (base,) = (b for b in payload.__orig_bases__ if typing.get_origin(b) is Payload)
        (named,) = typing.get_args(base)
        assert named.__forward_arg__ == event_class.__name__, payload


def test_append_returns_the_event_class_of_its_payload():
    session = new_session(MemoryStore())
    start = session.append(TurnStart(turn=1))
    prompt = session.append(user_message("hello"))
    assert type(start) is TurnStartEvent and start.data.turn == 1
    assert type(prompt) is UserMessageEvent and prompt.surface_op == "append"


def test_the_node_accessor_reads_current_and_shadowed_surface_events():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session, "old question", "old answer")
    checkpoint = replace_with_checkpoint(session, turn.user, turn.assistants[-1])
    assert turn.user not in session.nodes  # shadowed, still readable
    assert isinstance(session.node(turn.user), UserMessageEvent)
    assert isinstance(session.node(turn.assistants[-1]), AssistantMessageEvent)
    assert session.node(checkpoint).seq == checkpoint
    message = session.node_message(turn.user)
    assert message is not None and message.text() == "old question"


def test_the_node_accessor_refuses_a_log_only_event_by_its_type():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session)
    with pytest.raises(SurfaceError, match=r"is turn/start, not a surface event"):
        session.node(turn.turn_start)
    assert session.node_message(turn.turn_start) is None
