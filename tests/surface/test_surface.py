"""The surface and token accounting (docs/architecture.md, same sections) on hand-built sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.errors import EventValidationError, LogCorruptError, SurfaceError
from dsh.events import (
    AssistantMessage,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    Message,
    ReplaceOp,
    RequestConfig,
    RequestHeader,
    RequestHeaderBody,
    StepStart,
    TextBlock,
    ToolResult,
    TurnStart,
    Usage,
    decode_events,
    is_checkpoint_event,
)
from dsh.store import JsonlStore, MemoryStore
from dsh.surface import Replacement, Session, fold_surface, message_tokens, surface_message
from tests.fixtures.make_fixtures import COMPACTION_BASIC, build_compaction_basic
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    checkpoint_message,
    new_session,
    replace_with_checkpoint,
    surface_state,
    tool_call_block,
    tool_result_message,
    user_message,
)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


def _three_turns(store: MemoryStore) -> tuple[Session, list[int]]:
    """Three chat turns; returns the session and its surface nodes [u1, a1, u2, a2, u3, a3]."""
    session = new_session(store)
    for n in (1, 2, 3):
        append_chat_turn(session, f"prompt {n}", f"reply {n}")
    return session, list(session.nodes)


def _raw_lines(tmp_path: Path) -> tuple[JsonlStore, str, list[dict]]:
    """A stored JSONL session with a tool turn, as parsed JSON lines (header first)."""
    store = JsonlStore(tmp_path)
    with new_session(store) as session:
        append_tool_turn(session)
    lines = store.log_path(session.id).read_bytes().splitlines()
    return store, session.id, [json.loads(line) for line in lines]


def _store_lines(store: JsonlStore, session_id: str, lines: list[dict]) -> None:
    body = b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)
    store.log_path(session_id).write_bytes(body)


# ---- surface-field rules per type -----------------------------------------------------------

# seq → (description, edit of the stored event) in a stored tool turn:
# 0 turn/start, 1 step/start, 2 user/message, 3 assistant/message, 4 tool/call, 5 tool/result
FIELD_VIOLATIONS = {
    "user/message without surfaceOp": (2, lambda e: e.pop("surfaceOp")),
    "assistant/message without surfaceOp": (3, lambda e: e.pop("surfaceOp")),
    "tool/result without surfaceOp": (5, lambda e: e.pop("surfaceOp")),
    "turn/start with surfaceOp": (0, lambda e: e.update(surfaceOp="append")),
    "tool/call with surfaceOp": (4, lambda e: e.update(surfaceOp="append")),
    "step/start with sourceEventSeqs": (1, lambda e: e.update(sourceEventSeqs=[0])),
    "tool/call with sourceEventSeqs": (4, lambda e: e.update(sourceEventSeqs=[0])),
}


@pytest.mark.parametrize("case", FIELD_VIOLATIONS)
def test_stored_event_breaking_the_surface_field_rules_refuses_the_load(tmp_path, case):
    seq, edit = FIELD_VIOLATIONS[case]
    store, session_id, lines = _raw_lines(tmp_path)
    edit(lines[seq + 1])
    _store_lines(store, session_id, lines)
    with pytest.raises(LogCorruptError) as caught:
        store.open(session_id)
    assert f"line {seq + 2}" in str(caught.value)


def test_log_only_payload_with_a_surface_op_is_refused_at_append_and_nothing_is_written(store):
    session = new_session(store)
    append_chat_turn(session)
    with pytest.raises(EventValidationError, match="only surface events"):
        session.append(TurnStart(turn=2), surface_op="append")
    with pytest.raises(EventValidationError, match="only surface events"):
        session.append(StepStart(turn=2, step=1), source_event_seqs=[0])
    assert len(session.events) == 6
    assert len(store.lines[session.id]) == 6


def test_surface_payload_appends_with_op_append_by_default(store):
    session = new_session(store)
    event = session.append(user_message("hi"))
    assert event.surface_op == "append"
    assert event.source_event_seqs is None
    assert session.nodes == [event.seq]


# ---- replace validation ---------------------------------------------------------------------


def _replace_case(session: Session, nodes: list[int], case: str):
    """(payload, surface_op, sources) of an invalid replace on a session whose first turn was
    already replaced by a checkpoint (nodes u1, a1 are shadowed)."""
    u1, a1, u2, a2, u3, a3 = nodes
    next_seq = len(session.events)
    checkpoint = checkpoint_message("summary", "cmp-2")
    cases = {
        "start already shadowed": (checkpoint, ReplaceOp(start=u1, end=a2), [u1, a1, u2, a2]),
        "end already shadowed": (checkpoint, ReplaceOp(start=u2, end=a1), [u2, a1]),
        "start never on the surface": (checkpoint, ReplaceOp(start=0, end=a2), [0, u2, a2]),
        "end not yet in the log": (
            checkpoint,
            ReplaceOp(start=u2, end=next_seq + 3),
            [u2, a2],
        ),
        "start after end": (checkpoint, ReplaceOp(start=a2, end=u2), [u2, a2]),
        "sources miss a shadowed node": (checkpoint, ReplaceOp(start=u2, end=u3), [u2, u3]),
        "no sources at all": (checkpoint, ReplaceOp(start=u2, end=a2), None),
        "duplicate sources": (checkpoint, ReplaceOp(start=u2, end=a2), [u2, a2, a2]),
        "source is the event itself": (checkpoint, ReplaceOp(start=u2, end=a2), [u2, a2, next_seq]),
        "source comes later": (checkpoint, ReplaceOp(start=u2, end=a2), [u2, a2, next_seq + 1]),
        "empty sources on a user message": (checkpoint, ReplaceOp(start=u2, end=a2), []),
        "tool result replacing a user message": (
            ToolResult(turn=1, step=1, message=tool_result_message("call-x", "pruned")),
            ReplaceOp(start=u3, end=u3),
            [u3],
        ),
        "assistant replace missing the last shadowed node": (
            AssistantMessage(turn=3, step=1, message=assistant_message("edited")),
            ReplaceOp(start=u3, end=a3),
            [u3],
        ),
    }
    return cases[case]


REPLACE_CASES = {  # case → what the error must say
    "start already shadowed": "replace start .* is not a current surface node",
    "end already shadowed": "replace end .* is not a current surface node",
    "start never on the surface": "replace start 0 is not a current surface node",
    "end not yet in the log": "replace end .* is not a current surface node",
    "start after end": "comes after end",
    "sources miss a shadowed node": r"miss shadowed node\(s\) \[\d+\]",
    "no sources at all": "miss shadowed node",
    "duplicate sources": "sourceEventSeqs repeat",
    "source is the event itself": "must be earlier seqs",
    "source comes later": "must be earlier seqs",
    "empty sources on a user message": "may be empty only on assistant/message",
    "tool result replacing a user message": "exactly one tool/result",
    "assistant replace missing the last shadowed node": "miss shadowed node",
}


@pytest.mark.parametrize("case", REPLACE_CASES)
def test_invalid_replace_is_rejected_and_leaves_the_session_unchanged(store, case):
    session, nodes = _three_turns(store)
    replace_with_checkpoint(session, nodes[0], nodes[1], compaction_id="cmp-1")
    before = surface_state(session)
    events = list(session.events)
    stored = list(store.lines[session.id])
    messages = session.derive_messages()

    payload, op, sources = _replace_case(session, nodes, case)
    with pytest.raises((SurfaceError, EventValidationError), match=REPLACE_CASES[case]):
        session.append(payload, surface_op=op, source_event_seqs=sources)

    assert surface_state(session) == before
    assert list(session.events) == events
    assert store.lines[session.id] == stored
    assert session.derive_messages() == messages
    # The session is not wedged: a valid append still lands.
    session.append(user_message("still here"))


def test_replace_endpoint_already_shadowed_is_named_in_the_error(store):
    session, (u1, a1, u2, a2, *_) = _three_turns(store)
    replace_with_checkpoint(session, u1, a1)
    with pytest.raises(SurfaceError, match=f"replace start {u1} is not a current surface node"):
        session.append(
            checkpoint_message("again", "cmp-2"),
            surface_op=ReplaceOp(start=u1, end=a2),
            source_event_seqs=[u1, a1, u2, a2],
        )


def test_empty_source_list_is_allowed_only_on_an_assistant_message(store):
    session = new_session(store)
    with pytest.raises(EventValidationError, match="may be empty only on assistant/message"):
        session.append(user_message("hi"), source_event_seqs=[])
    event = session.append(
        AssistantMessage(turn=1, step=1, message=assistant_message("hello")), source_event_seqs=[]
    )
    assert event.source_event_seqs == ()


def test_invalid_replace_in_a_stored_log_refuses_the_load_naming_its_seq(tmp_path):
    store, session_id, lines = _raw_lines(tmp_path)
    # seq 6 step/end becomes a checkpoint whose end (turn/start, seq 0) was never a surface node
    lines[7] = {
        "type": "user/message",
        "seq": 6,
        "time": 1,
        "data": {
            "id": "c",
            "role": "user",
            "content": [{"type": "text", "text": "s"}],
            "source": {"kind": "plugin", "plugin": "compact", "compactionId": "x"},
        },
        "surfaceOp": {"op": "replace", "start": 2, "end": 0},
        "sourceEventSeqs": [0, 2],
    }
    _store_lines(store, session_id, lines)
    with pytest.raises(LogCorruptError, match="event seq 6") as caught:
        Session.open(store, session_id)
    assert caught.value.seq == 6


def test_tool_result_replace_must_shadow_exactly_one_tool_result(store):
    session = new_session(store)
    turn = append_tool_turn(session, calls=[("ls", "{}", "a b c"), ("cat", '{"f":"a"}', "x" * 400)])
    first, second = turn.results
    state = surface_state(session)
    pruned = ToolResult(turn=1, step=1, message=tool_result_message("call-x", "[pruned]"))
    with pytest.raises(SurfaceError, match="exactly one tool/result"):
        session.append(
            pruned,
            surface_op=ReplaceOp(start=first, end=second),
            source_event_seqs=[
                first,
                second,
            ],
        )
    with pytest.raises(SurfaceError, match="exactly one tool/result"):
        session.append(
            pruned,
            surface_op=ReplaceOp(start=turn.user, end=turn.user),
            source_event_seqs=[turn.user],
        )
    assert surface_state(session) == state

    call_id = session.events[second].data.message.content[0].tool_call_id
    kept = ToolResult(turn=1, step=1, message=tool_result_message(call_id, "[pruned]"))
    event = session.append(
        kept, surface_op=ReplaceOp(start=second, end=second), source_event_seqs=[second]
    )
    assert session.nodes == [turn.user, turn.assistants[0], first, event.seq, turn.assistants[1]]


def test_a_tool_result_replace_that_repoints_the_tool_call_id_is_refused(store, tmp_path):
    """A pruned or replaced tool/result must answer the same call; providers reject a result
    pointing at another call (HTTP 400), so the append is refused and nothing changes."""
    session = new_session(store)
    turn = append_tool_turn(session, calls=[("ls", "{}", "a b c"), ("cat", '{"f":"a"}', "x" * 400)])
    first, second = turn.results
    first_id = session.events[first].data.message.content[0].tool_call_id
    state, length = surface_state(session), len(session.events)
    repointed = ToolResult(turn=1, step=1, message=tool_result_message(first_id, "[pruned]"))
    with pytest.raises(SurfaceError, match=f"must keep toolCallId .* not '{first_id}'"):
        session.append(
            repointed, surface_op=ReplaceOp(start=second, end=second), source_event_seqs=[second]
        )
    assert surface_state(session) == state and len(session.events) == length


# ---- the fold -------------------------------------------------------------------------------


def test_replace_splices_its_span_and_inserts_the_new_node_at_the_start_position(store):
    session, (u1, a1, u2, a2, u3, a3) = _three_turns(store)
    assert session.replace_generation == 0
    c1 = replace_with_checkpoint(session, u2, a2)
    assert session.nodes == [u1, a1, c1, u3, a3]
    assert session.replace_generation == 1
    assert session.surface.position(c1) == 2
    assert session.surface.position(a3) == 4
    assert session.replacements == [Replacement(seq=c1, start=u2, end=a2, shadowed_seqs=(u2, a2))]

    # A later replace may swallow an earlier checkpoint.
    c2 = replace_with_checkpoint(session, u1, c1)
    assert session.nodes == [c2, u3, a3]
    assert session.replace_generation == 2
    assert session.replacements[-1] == Replacement(c2, u1, c1, (u1, a1, c1))
    assert fold_surface(session.events) == (session.nodes, session.replacements)


def test_single_node_replace_keeps_the_surface_length(store):
    session, (u1, a1, u2, a2, u3, a3) = _three_turns(store)
    edited = session.append(
        AssistantMessage(turn=2, step=1, message=assistant_message("shorter")),
        surface_op=ReplaceOp(start=a2, end=a2),
        source_event_seqs=[a2],
    )
    assert session.nodes == [u1, a1, u2, edited.seq, u3, a3]
    assert session.replace_generation == 1


def test_fold_at_load_equals_the_live_projection(tmp_path):
    store = JsonlStore(tmp_path)
    session = new_session(store)
    first = append_tool_turn(session, calls=[("ls", "{}", "a"), ("ls", "{}", "b")])
    append_chat_turn(session)
    replace_with_checkpoint(session, first.user, first.assistants[-1], extra_sources=[0])
    third = append_tool_turn(session)
    call_id = session.events[third.results[0]].data.message.content[0].tool_call_id
    session.append(
        ToolResult(turn=3, step=1, message=tool_result_message(call_id, "[pruned]")),
        surface_op=ReplaceOp(start=third.results[0], end=third.results[0]),
        source_event_seqs=[third.results[0]],
    )
    session.close()

    reloaded = Session.open(store, session.id)
    assert fold_surface(reloaded.events) == (session.nodes, session.replacements)
    assert reloaded.nodes == session.nodes
    assert reloaded.replacements == session.replacements
    assert reloaded.replace_generation == session.replace_generation == 2
    assert reloaded.derive_messages() == session.derive_messages()
    reloaded.close()


def test_derive_messages_are_the_current_nodes_in_order_skipping_empty_assistant_messages(
    store,
):
    session = new_session(store)
    session.append(TurnStart(turn=1))
    prompt = session.append(user_message("hi"))
    empty = session.append(AssistantMessage(turn=1, step=1, message=assistant_message("")))
    reply = session.append(AssistantMessage(turn=1, step=1, message=assistant_message("hello")))
    assert session.nodes == [prompt.seq, empty.seq, reply.seq]
    assert session.derive_messages() == [prompt.data, reply.data.message]
    assert session.node_tokens(empty.seq) == 0


# ---- tool pairing ---------------------------------------------------------------------------


def test_pairing_is_balanced_only_outside_a_parallel_tool_call_group(store):
    session = new_session(store)
    chat = append_chat_turn(session)
    turn = append_tool_turn(
        session, calls=[("ls", "{}", "a"), ("ls", '{"d":"x"}', "b"), ("pwd", "{}", "/")]
    )
    asks = turn.assistants[0]
    r1, r2, r3 = turn.results
    final = turn.assistants[1]

    assert session.tool_pairing_balanced_before(chat.user)
    assert session.tool_pairing_balanced_after(chat.assistants[0])
    assert session.tool_pairing_balanced_before(asks)
    assert not session.tool_pairing_balanced_after(asks)
    for result in (r1, r2):
        assert not session.tool_pairing_balanced_before(result)
        assert not session.tool_pairing_balanced_after(result)
    assert not session.tool_pairing_balanced_before(r3)
    assert session.tool_pairing_balanced_after(r3)
    assert session.tool_pairing_balanced_before(final)
    assert session.tool_pairing_balanced_after(final)
    assert [session.surface.pairing_balance_after(i) for i in range(len(session.nodes))] == [
        0,
        0,
        0,
        3,
        2,
        1,
        0,
        0,
    ]


def test_pairing_of_a_seq_that_is_not_a_current_node_is_an_error(store):
    session, (u1, a1, *_) = _three_turns(store)
    replace_with_checkpoint(session, u1, a1)
    with pytest.raises(SurfaceError, match="not a current surface node"):
        session.tool_pairing_balanced_after(u1)


def test_pairing_follows_surface_order_after_a_replace(store):
    session = new_session(store)
    turn = append_tool_turn(session, calls=[("ls", "{}", "a"), ("ls", "{}", "b")])
    assert not session.tool_pairing_balanced_after(turn.results[0])
    # The whole tool exchange becomes one checkpoint: the cut after it is balanced.
    checkpoint = replace_with_checkpoint(session, turn.user, turn.results[1])
    assert session.tool_pairing_balanced_after(checkpoint)
    assert session.tool_pairing_balanced_before(turn.assistants[1])


def test_tool_result_before_any_call_is_a_corrupt_negative_balance(store):
    session = new_session(store)
    prompt = session.append(user_message("hi"))
    orphan = session.append(
        ToolResult(turn=1, step=1, message=tool_result_message("call-none", "?"))
    )
    assert session.tool_pairing_balanced_after(prompt.seq)
    with pytest.raises(SurfaceError, match="negative") as caught:
        session.tool_pairing_balanced_after(orphan.seq)
    assert caught.value.seq == orphan.seq
    session.close()
    # The same log loaded from storage fails the same way when pairing is asked.
    reloaded = Session.open(store, session.id)
    with pytest.raises(SurfaceError, match="negative"):
        reloaded.tool_pairing_balanced_after(orphan.seq)
    reloaded.close()


# ---- measure --------------------------------------------------------------------------------

SYSTEM = "You are terse."  # 14 chars
TOOLS = ({"name": "ls"},)  # encodes as [{"name":"ls"}]: 15 chars


def _header(system: str = SYSTEM) -> RequestHeader:
    return RequestHeader(
        header=RequestHeaderBody(
            config=RequestConfig(provider="fake", model="fake-model"), system=system, tools=TOOLS
        ),
        reason="initial",
    )


def test_measure_without_usage_is_the_spec_heuristic(store):
    session = new_session(store)
    session.append(_header())
    session.append(user_message("hello world"))
    asks = Message(
        id="a",
        role="assistant",
        content=(
            assistant_message(reasoning="think").content[0],
            TextBlock(text="hi"),
            tool_call_block("c1", "ls", "{}"),
        ),
        source=assistant_message().source,
    )
    session.append(AssistantMessage(turn=1, step=1, message=asks))
    session.append(ToolResult(turn=1, step=1, message=tool_result_message("c1", "a.txt b.txt")))

    system = 4 + 4  # ceil(14/4) + 4
    tools = 4 + 4  # ceil(15/4) + 4
    user = (3 + 4) + 4  # "hello world": ceil(11/4) + 4, + 4 per message
    assistant = (2 + 4) + (1 + 4) + (1 + 1 + 4) + 4  # reasoning, text, call(ls, {}), message
    result = ((3 + 4) + 4) + 4  # inner text ceil(11/4)+4, block +4, message +4
    measured = session.measure()
    assert [session.node_tokens(seq) for seq in session.nodes] == [user, assistant, result]
    assert [user, assistant, result] == [11, 21, 15]
    assert measured.total_tokens == system + tools + user + assistant + result == 63
    assert not measured.anchored


def test_measure_anchors_on_the_last_assistant_usage_and_adds_later_nodes(store):
    session = new_session(store)
    session.append(_header())
    session.append(user_message("hello world"))
    replied = session.append(
        AssistantMessage(
            turn=1,
            step=1,
            message=assistant_message("hi"),  # ceil(2/4) + 4 + 4 = 9
            usage=Usage(
                input_tokens=1000, output_tokens=7, cache_read_tokens=200, cache_write_tokens=30
            ),
        )
    )
    session.append(user_message("hello world"))  # 11, as above

    measured = session.measure()
    assert measured.anchored
    assert measured.total_tokens == (1000 + 200 + 30) + 9 + 11
    assert message_tokens(replied.data.message) == 9
    session.close()
    assert Session.open(store, session.id).measure() == measured


def test_measure_is_anchored_after_a_replace_that_came_before_the_usage(store):
    session, (u1, a1, *_) = _three_turns(store)
    replace_with_checkpoint(session, u1, a1)
    session.append(
        AssistantMessage(
            turn=4,
            step=1,
            message=assistant_message(""),
            usage=Usage(input_tokens=50, output_tokens=1),
        )
    )
    measured = session.measure()
    assert measured.anchored
    assert measured.total_tokens == 50  # the empty reply adds nothing


def test_measure_is_unanchored_after_a_replace(store):
    session, (u1, _, _, a2, _, _) = _three_turns(store)
    session.append(
        AssistantMessage(
            turn=3,
            step=2,
            message=assistant_message("ok"),
            usage=Usage(input_tokens=5000, output_tokens=3),
        )
    )
    assert session.measure().anchored
    replace_with_checkpoint(session, u1, a2)
    measured = session.measure()
    assert not measured.anchored
    assert measured.total_tokens == sum(session.node_tokens(seq) for seq in session.nodes)
    assert measured.total_tokens < 5000


def test_measure_is_unanchored_after_a_request_header_change(store):
    session = new_session(store)
    session.append(_header())
    session.append(
        AssistantMessage(
            turn=1,
            step=1,
            message=assistant_message("ok"),
            usage=Usage(input_tokens=5000, output_tokens=3),
        )
    )
    assert session.measure().anchored
    session.append(_header(system="You are verbose now."))
    measured = session.measure()
    assert not measured.anchored
    assert measured.total_tokens < 5000


def test_interrupted_assistant_message_does_not_anchor(store):
    session = new_session(store)
    session.append(user_message("hi"))
    session.append(
        AssistantMessage(
            turn=1,
            step=1,
            message=assistant_message("partial"),
            usage=Usage(input_tokens=5000, output_tokens=3),
            interrupted=True,
        )
    )
    assert not session.measure().anchored


# ---- the recorded compaction fixture --------------------------------------------------------


def _fixture_session() -> Session:
    lines = COMPACTION_BASIC.read_bytes().splitlines()
    store = MemoryStore()
    return Session(store.create(cwd="/work/project", seed=decode_events(lines[1:], first_line=2)))


def test_compaction_fixture_is_what_its_generator_writes():
    assert COMPACTION_BASIC.read_bytes() == build_compaction_basic()


def test_compaction_fixture_bracket_is_start_summary_replace_end_with_the_exact_price():
    session = _fixture_session()
    events = session.events
    kinds = [type(e) for e in events]
    start = kinds.index(CompactionStartEvent)
    summary, checkpoint, end = events[start + 1], events[start + 2], events[start + 3]
    assert isinstance(summary, CompactionSummaryEvent)
    assert is_checkpoint_event(checkpoint)
    assert isinstance(end, CompactionEndEvent)
    data = summary.data
    assert data.kind == "state"
    assert data.shadowed_range == (data.shadowed_seqs[0], data.shadowed_seqs[-1])
    assert checkpoint.surface_op == ReplaceOp(
        start=data.shadowed_range[0], end=data.shadowed_range[1]
    )
    assert checkpoint.source_event_seqs == (start, summary.seq, *data.shadowed_seqs)
    assert checkpoint.data.source.compaction_id == data.compaction_id == end.data.compaction_id
    assert session.replacements[0].shadowed_seqs == data.shadowed_seqs
    # user "What is in notes.txt?" (6+4)+4, call read_file/{"path":"notes.txt"} (3+5+4)+4,
    # result "buy milk" ((2+4)+4)+4, reply 'notes.txt says "buy milk".' (7+4)+4
    assert data.shadowed_token_count == 14 + 16 + 14 + 15 == 59
    priced = sum(message_tokens(surface_message(events[s])) for s in data.shadowed_seqs)
    assert priced == data.shadowed_token_count
