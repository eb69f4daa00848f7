"""The tolerant reader: one test group per item of the import issue (upstream-format fixtures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.errors import DshError, LogCorruptError
from dsh.events import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionPruneEvent,
    CompactionSummaryEvent,
    LlmRetryEvent,
    OpaqueEvent,
    PluginSource,
    RequestErrorEvent,
    RequestHeaderEvent,
    SessionTitleEvent,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
    UserSource,
    encode_event,
    surface_message,
)
from dsh.interop import UpstreamFormatError, read_upstream
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.surface.projection import fold_surface
from dsh.transcript import render_human_transcript
from tests.interop import make_fixtures

FIXTURES = Path(__file__).parent / "fixtures"


def convert(name: str):
    return read_upstream((FIXTURES / name).read_bytes(), name=name)


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def test_fixtures_match_the_script_that_writes_them(tmp_path, monkeypatch):
    monkeypatch.setattr(make_fixtures, "FIXTURES", tmp_path)
    make_fixtures.main()
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in FIXTURES.glob("*.jsonl"))
    for name in written:
        assert (tmp_path / name).read_bytes() == (FIXTURES / name).read_bytes(), name


def test_dsh_own_reader_refuses_an_upstream_log_as_it_is(tmp_path):
    store = JsonlStore(tmp_path)
    target = store.session_dir("raw")
    target.mkdir(parents=True)
    (target / "session.jsonl").write_bytes((FIXTURES / "01-header-v0.jsonl").read_bytes())
    assert store.list() == []  # the v0 header without cwd is not a dsh header
    with pytest.raises(LogCorruptError, match="line 1"):
        store.open("raw")


# ---- 1. header ------------------------------------------------------------------------------


def test_version_0_header_with_delegation_depth_and_no_cwd_is_accepted():
    result = convert("01-header-v0.jsonl")
    header = result.header
    assert header.id == "0b8e1f8a-0001-4d0e-9a51-5e0c9b1f0a01"
    assert header.created_at == make_fixtures.T0
    assert header.cwd is None
    assert header.extras == {
        "delegationDepth": 1,
        "origin": {"kind": "delegate", "parentCallId": "call-9"},
        "agentPreset": "explore",
    }
    assert [e.seq for e in result.events] == list(range(7))


def test_request_header_config_extras_become_params():
    header = next(
        e for e in convert("01-header-v0.jsonl").events if isinstance(e, RequestHeaderEvent)
    )
    config = header.data.header.config
    assert (config.provider, config.model, config.params) == (
        "deepseek",
        "deepseek-chat",
        {"maxTokens": 4096},
    )


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ({"type": "session", "version": 2, "id": "x", "createdAt": 1}, "version 2 .*newer dsh"),
        ({"type": "session", "version": 1, "id": "x", "createdAt": 1}, "not a valid dsh session"),
        ({"type": "session", "version": True, "id": "x", "createdAt": 1}, "version True"),
        ({"type": "session", "version": 0, "createdAt": 1}, "no id"),
        ({"type": "session", "version": 0, "id": "x", "createdAt": "soon"}, "createdAt"),
        ({"type": "turn/start", "seq": 0}, "session header"),
    ],
)
def test_a_bad_header_is_refused_naming_line_1(header, message):
    with pytest.raises(UpstreamFormatError, match=f"f.jsonl: line 1: .*{message}"):
        read_upstream(json.dumps(header).encode() + b"\n", name="f.jsonl")


# ---- 2. tool results with role user ---------------------------------------------------------


def test_role_user_tool_results_become_role_tool():
    result = convert("02-tool-result-role.jsonl")
    assert rows("02-tool-result-role.jsonl")[6]["data"]["message"]["role"] == "user"
    (tool,) = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert tool.data.message.role == "tool"
    assert tool.data.message.content[0].content[0].text == "launch code: PURPLE-42"
    assert result.notes["user-role tool result stored as role tool"] == 1


# ---- 3. block summaries and {start, end} ranges ---------------------------------------------


def test_block_summaries_are_joined_and_ranges_become_pairs():
    result = convert("03-block-summary.jsonl")
    (summary,) = [e for e in result.events if isinstance(e, CompactionSummaryEvent)]
    data = summary.data
    assert data.summary.startswith("## Request\n- read notes.txt")
    assert data.raw_output == data.summary and data.llm_stream_call
    assert data.shadowed_range == (2, 14) and data.shadowed_seqs == (2, 3, 18, 8, 13, 14)
    assert data.kind is None  # legacy: counts as a state checkpoint
    (prune,) = [e for e in result.events if isinstance(e, CompactionPruneEvent)]
    assert prune.data.shadowed_range == (5, 5)
    assert result.notes["dropped field compaction/summary.maxTokens"] == 1
    assert result.notes["dropped field compaction/summary.sourceCommandId"] == 1
    (end,) = [e for e in result.events if isinstance(e, CompactionEndEvent)]
    assert end.data.compaction_id == "cmp-1" and end.data.turn is None


def test_the_imported_checkpoint_lands_on_the_surface_like_a_dsh_one():
    result = convert("03-block-summary.jsonl")
    nodes, replacements = fold_surface(result.events)
    assert nodes == [22, 27, 28]
    assert [(r.seq, r.shadowed_seqs) for r in replacements] == [
        (18, (5,)),
        (22, (2, 3, 18, 8, 13, 14)),
    ]
    checkpoint = result.events[22]
    assert isinstance(checkpoint, UserMessageEvent)
    assert isinstance(checkpoint.data.source, PluginSource)
    assert checkpoint.data.source.plugin == "compact"


# ---- 4. stream chunks and failed finishes ---------------------------------------------------


def test_delta_chunks_map_and_a_failed_finish_becomes_request_error():
    result = convert("04-stream-chunks.jsonl")
    (error,) = [e for e in result.events if isinstance(e, RequestErrorEvent)]
    assert (error.seq, error.data.turn, error.data.step) == (4, 1, 1)
    assert (error.data.code, error.data.message, error.data.retryable) == (
        "CONTEXT_WINDOW_EXCEEDED",
        "prompt too long",
        False,
    )
    deltas = [e for e in result.events if isinstance(e, AssistantChunkEvent)]
    assert [(d.data.chunk.type, d.data.chunk.delta) for d in deltas] == [
        ("reasoning", "Use bash."),
        ("tool-call", '{"command":'),
        ("tool-call", '"pytest -q"}'),
        ("text", "All "),
        ("text", "green."),
    ]
    assert (deltas[1].data.chunk.id, deltas[1].data.chunk.name, deltas[1].data.chunk.index) == (
        "call-7",
        "bash",
        1,
    )
    opaque = [e for e in result.events if isinstance(e, OpaqueEvent)]
    assert {e.type for e in opaque} == {"upstream:assistant/chunk"}
    kept = [json.loads(e.raw)["data"]["chunk"]["type"] for e in opaque]
    assert sorted(kept) == sorted(
        ["block-start", "block-end"] * 2 + ["block-start", "usage", "finish"]
    )


def test_assistant_messages_keep_citing_their_chunk_seqs():
    result = convert("04-stream-chunks.jsonl")
    first = next(e for e in result.events if isinstance(e, AssistantMessageEvent))
    assert first.source_event_seqs == tuple(range(5, 14))
    assert all(result.events[s].seq == s for s in first.source_event_seqs)


# ---- 5. packed rows -------------------------------------------------------------------------


def test_packed_rows_expand_to_consecutive_seqs_with_their_times():
    result = convert("05-packed-rows.jsonl")
    assert [e.seq for e in result.events] == list(range(21))
    chunks = [e for e in result.events if isinstance(e, AssistantChunkEvent)]
    assert [c.seq for c in chunks] == list(range(3, 13))
    assert "".join(c.data.chunk.delta for c in chunks if c.data.chunk.type == "text") == (
        "Hello there."
    )
    time0 = make_fixtures.T0 + 100 * 7  # the text row: seq0 6, dt [2, 4, 4, 1]
    assert [c.time for c in chunks if c.data.chunk.type == "text"] == [
        time0 + 2,
        time0 + 6,
        time0 + 10,
        time0 + 11,
    ]
    tool = [c.data.chunk for c in chunks if c.data.chunk.type == "tool-call"]
    assert {(t.id, t.name, t.index) for t in tool} == {("call-3", "list_dir", 2)}
    assert "".join(t.delta for t in tool) == '{"path":"."}'


def test_a_packed_row_whose_seq0_leaves_a_gap_is_refused_naming_its_line():
    lines = (FIXTURES / "05-packed-rows.jsonl").read_text().splitlines()
    row = json.loads(lines[5])
    row["seq0"] += 1
    lines[5] = json.dumps(row)
    with pytest.raises(UpstreamFormatError, match=r"line 6: expected seq 6 but found seq 7"):
        read_upstream("\n".join(lines).encode() + b"\n", name="gap.jsonl")


# ---- 6. foreign vocabulary ------------------------------------------------------------------


def test_foreign_log_only_events_are_kept_opaque_and_ignorable_so_nothing_is_dropped():
    result = convert("06-foreign-events.jsonl")
    source = rows("06-foreign-events.jsonl")[1:]
    assert len(result.events) == len(source)
    opaque = {e.seq: e for e in result.events if isinstance(e, OpaqueEvent)}
    assert {e.type for e in opaque.values()} >= {"agent/inbox/spliced"}
    for seq, event in opaque.items():
        stored = json.loads(encode_event(event))
        assert stored["ignorable"] is True and stored["foreign"] is True
        assert stored["data"] == source[seq]["data"]
    # llm/retry is a dsh type, but this one has upstream's shape: kept opaque under a new name
    assert opaque[12].type == "upstream:llm/retry"
    assert not any(isinstance(e, LlmRetryEvent) for e in result.events)
    # session/title has the same shape in both vocabularies: it becomes dsh's own event
    (title,) = [e for e in result.events if isinstance(e, SessionTitleEvent)]
    assert title.data.title == "TODO hunt"


def test_a_foreign_event_that_changes_the_surface_refuses_the_import_naming_the_line():
    with pytest.raises(UpstreamFormatError) as caught:
        convert("06-foreign-surface-event.jsonl")
    message = str(caught.value)
    assert message == (
        "06-foreign-surface-event.jsonl: line 8: seq 6 (note/pinned): upstream event "
        "'note/pinned' changes the surface but dsh has no such event"
    )


def test_a_session_with_opaque_events_projects_as_if_they_were_absent(tmp_path):
    result = convert("06-foreign-events.jsonl")
    store = JsonlStore(tmp_path)
    log = store.create(cwd="/w", seed=result.events)
    log.close()
    with Session.open(store, log.id) as session:
        texts = [surface_message(session.events[s]).text() for s in session.nodes]  # type: ignore[arg-type, union-attr]
        assert texts == ["Find the TODOs.", "One TODO in main.py."]
        assert list(session.events) == result.events
        assert "TODO hunt" not in render_human_transcript(session.events)


# ---- 7. source extras -----------------------------------------------------------------------


def test_source_extras_are_dropped_and_agent_instructions_become_a_plugin_source():
    result = convert("07-source-extras.jsonl")
    users = [e for e in result.events if isinstance(e, UserMessageEvent)]
    assert [u.data.source for u in users] == [
        PluginSource(plugin="agent-instructions"),
        PluginSource(plugin="git", form="context"),
        UserSource(),
    ]
    assistant = next(e for e in result.events if isinstance(e, AssistantMessageEvent))
    assert assistant.data.message.source.model == "deepseek-chat"  # type: ignore[union-attr]
    for field in (
        "agent-instructions source.sections",
        "plugin source.rpcId",
        "user source.rpcId",
        "model source.replayState",
    ):
        assert result.notes[f"dropped field {field}"] == 1
    turn_end = next(e for e in result.events if isinstance(e, TurnEndEvent))
    assert (turn_end.data.reason.kind, turn_end.data.reason.error) == ("aborted", "blocked")


# ---- bad input ------------------------------------------------------------------------------


def test_bad_json_mid_file_names_its_line_and_a_torn_tail_is_dropped_with_a_warning():
    good = (FIXTURES / "01-header-v0.jsonl").read_bytes()
    lines = good.split(b"\n")
    broken = b"\n".join([*lines[:3], b"{not json", *lines[3:]])
    with pytest.raises(UpstreamFormatError) as refused:
        read_upstream(broken, name="b.jsonl")
    assert str(refused.value) == (  # its column, not msgspec's "(byte 1)"
        "b.jsonl: line 4: not valid JSON (JSON is malformed: object keys must be strings "
        "at column 2)"
    )
    torn = read_upstream(good + b'{"type":"turn/st', name="t.jsonl")
    assert len(torn.events) == 7 and "torn last line" in torn.warnings[0]


def test_a_nan_in_the_data_is_refused_rather_than_stored_lossily():
    lines = (FIXTURES / "01-header-v0.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"turn":1', '"turn":NaN')
    with pytest.raises(UpstreamFormatError, match="line 2: not valid JSON"):
        read_upstream("\n".join(lines).encode() + b"\n", name="n.jsonl")


def test_an_event_dsh_cannot_type_is_refused_naming_line_and_seq():
    lines = (FIXTURES / "01-header-v0.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"step":1', '"step":"one"')
    with pytest.raises(UpstreamFormatError, match=r"line 3: .*seq 1.*step/start") as caught:
        read_upstream("\n".join(lines).encode() + b"\n", name="s.jsonl")
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, DshError)


def test_a_replace_over_a_node_not_on_the_surface_is_refused_naming_the_line():
    lines = (FIXTURES / "03-block-summary.jsonl").read_text().splitlines()
    row = json.loads(lines[23])  # the checkpoint (seq 22)
    row["surfaceOp"] = {"op": "replace", "start": 5, "end": 14}  # 5 was pruned away
    lines[23] = json.dumps(row)
    with pytest.raises(UpstreamFormatError, match="line 24: "):
        read_upstream("\n".join(lines).encode() + b"\n", name="r.jsonl")


@pytest.mark.parametrize(
    "seqs", [[2, 3, 18, 8, 13, 99], [2, 3, 18, 8, 13, -1], [], [0, 1], [2, 3, 5, 8, 13, 14]]
)
def test_a_summary_whose_shadowed_seqs_are_not_what_its_checkpoint_replaced_is_refused(seqs):
    """Recall reads a checkpoint's originals from its summary's shadowedSeqs: a log whose
    summary named other seqs imported, and then ``dsh recall`` crashed with a traceback (a seq
    past the log, none at all) or read the wrong messages (a negative seq, seqs of other
    events, the pruned original instead of its copy)."""
    lines = (FIXTURES / "03-block-summary.jsonl").read_text().splitlines()
    row = json.loads(lines[22])  # the summary (seq 21)
    row["data"]["shadowedSeqs"] = seqs
    lines[22] = json.dumps(row)
    with pytest.raises(UpstreamFormatError) as caught:
        read_upstream("\n".join(lines).encode() + b"\n", name="s.jsonl")
    message = str(caught.value)
    assert message.startswith("s.jsonl: line 24: seq 22 (user/message): ")
    assert "compaction/summary seq 21" in message and "shadowedSeqs" in message
    assert "\n" not in message


# ---- content the mapping has to bend or refuse ---------------------------------------------


def _one_user_message(content: list, source: dict | None = None) -> bytes:
    header = {"type": "session", "version": 0, "id": "x", "createdAt": 1, "delegationDepth": 0}
    message = {"id": "u", "role": "user", "content": content, "source": source or {"kind": "user"}}
    event = {"type": "user/message", "seq": 0, "time": 1, "data": message, "surfaceOp": "append"}
    return (json.dumps(header) + "\n" + json.dumps(event) + "\n").encode()


def test_an_image_block_becomes_a_counted_text_placeholder():
    image = {"type": "image", "attachment": {"id": "att-1", "mediaType": "image/png"}}
    result = read_upstream(_one_user_message([{"type": "text", "text": "see"}, image]), name="i")
    message = result.events[0].data  # type: ignore[union-attr]
    assert [b.text for b in message.content] == ["see", "[image]"]
    assert result.notes["image block replaced by a text placeholder"] == 1


@pytest.mark.parametrize(
    ("content", "source", "message"),
    [
        (
            [{"type": "audio", "data": "…"}],
            None,
            "content block type 'audio' has no dsh counterpart",
        ),
        ([{"type": "text", "text": "x"}], {"kind": "robot"}, "message source kind 'robot'"),
    ],
)
def test_surface_content_without_a_dsh_counterpart_refuses_naming_the_line(
    content, source, message
):
    with pytest.raises(
        UpstreamFormatError, match=f"^u: line 2: seq 0 \\(user/message\\): {message}"
    ):
        read_upstream(_one_user_message(content, source), name="u")


def _log(*events: dict) -> bytes:
    header = {"type": "session", "version": 0, "id": "x", "createdAt": 1, "delegationDepth": 0}
    return "".join(json.dumps(r) + "\n" for r in (header, *events)).encode()


def test_header_extras_error_objects_and_block_systems_are_bent_into_dsh_shapes():
    config = {"provider": "p", "model": "m", "temperature": 0.2}
    header = {"config": config, "system": [{"type": "text", "text": "be terse"}]}
    header["adapterDefaults"] = {"maxTokens": 10}
    result = read_upstream(
        _log(
            {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
            {
                "type": "request/header",
                "seq": 1,
                "time": 1,
                "data": {"header": header, "reason": "initial"},
            },
            {
                "type": "turn/end",
                "seq": 2,
                "time": 1,
                "data": {
                    "turn": 1,
                    "reason": {"kind": "error", "error": {"message": "boom", "code": "X"}},
                },
            },
        ),
        name="h",
    )
    body = result.events[1].data.header  # type: ignore[union-attr]
    assert (body.system, body.config.params) == ("be terse", {"temperature": 0.2})
    assert result.notes["dropped field request/header.adapterDefaults"] == 1
    assert result.events[2].data.reason.error == "boom"  # type: ignore[union-attr]


def test_a_finish_with_a_bare_error_reason_and_a_sibling_failure_is_a_request_error():
    chunk = {
        "type": "finish",
        "reason": "error",
        "failure": {"code": "RATE_LIMITED", "retryable": True},
    }
    result = read_upstream(
        _log(
            {
                "type": "assistant/chunk",
                "seq": 0,
                "time": 1,
                "data": {"turn": 1, "step": 1, "chunk": chunk},
            }
        ),
        name="f",
    )
    data = result.events[0].data  # type: ignore[union-attr]
    assert (data.code, data.message, data.retryable) == ("RATE_LIMITED", "RATE_LIMITED", True)


def test_an_event_upstream_already_marked_ignorable_keeps_its_envelope_without_the_marker():
    event = {"type": "x/new", "seq": 0, "time": 1, "data": {"a": 1}, "ignorable": True}
    (opaque,) = read_upstream(_log(event), name="i").events
    assert isinstance(opaque, OpaqueEvent) and json.loads(opaque.raw) == event


def test_tool_call_arguments_given_as_a_json_value_are_stored_as_their_text():
    call = {"type": "tool-call", "id": "c", "name": "grep", "arguments": {"q": "x"}}
    message = {"id": "a", "role": "assistant", "content": [call], "source": make_fixtures.MODEL}
    event = {"type": "assistant/message", "seq": 0, "time": 1}
    event.update(data={"turn": 1, "step": 1, "message": message}, surfaceOp="append")
    result = read_upstream(_log(event), name="a")
    block = result.events[0].data.message.content[0]  # type: ignore[union-attr]
    assert block.arguments == '{"q":"x"}'


def test_unknown_envelope_fields_on_a_known_type_are_dropped_and_counted():
    event = {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}, "traceId": "t-1"}
    result = read_upstream(_log(event), name="e")
    assert result.events[0].data.turn == 1  # type: ignore[union-attr]
    assert result.notes["dropped field envelope.traceId"] == 1


def test_a_reasoning_signature_or_error_code_that_is_not_text_is_dropped_and_counted():
    message = {
        "id": "a1",
        "role": "assistant",
        "content": [{"type": "reasoning", "text": "hm", "signature": {"v": 1}, "redacted": None}],
        "source": {"kind": "model", "provider": "p", "model": "m"},
    }
    data = {"turn": 1, "step": 1, "message": message, "errorCode": 7, "recoveredFromText": "x"}
    result = read_upstream(
        _log(
            {
                "type": "assistant/message",
                "seq": 0,
                "time": 1,
                "data": data,
                "surfaceOp": "append",
                "sourceEventSeqs": [],
            }
        ),
        name="r",
    )
    (event,) = result.events
    assert isinstance(event, AssistantMessageEvent)
    assert event.data.error_code is None and event.data.recovered_from_text == "x"
    assert event.data.message.content[0].signature is None  # type: ignore[union-attr]
    assert result.notes == {
        "dropped field reasoning block.signature (not text)": 1,
        "dropped field assistant/message.errorCode (not text)": 1,
    }
