"""A note dsh gives the model as a user turn (``dsh undo``'s ``[undo] …``, the output-limit
notice) is ``Context from <plugin>: …`` in what people read, and stays ``User: …`` in every text
the model reads: the surface, a summariser's slice, a ``history_read`` page (docs/architecture.md,
"The human transcript")."""

from __future__ import annotations

from dsh.agent.step_outcome import CUT_TEXT_CALL_NOT_RUN, cut_call_notice
from dsh.agent.undo_scan import UNDO_PLUGIN
from dsh.compaction.model_summarizer import as_transcript
from dsh.compaction.recallable.texts import slice_text
from dsh.events import Message, PluginSource, TextBlock
from dsh.recall.render import render_node
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.transcript import render_human_transcript, render_markdown, render_message
from dsh.transcript.find import find_in_transcript
from tests.helpers import append_chat_turn, new_session

UNDO_TEXT = "[undo] The user undid the file changes you made. These files are back: a.txt."


def _undo_note() -> Message:
    return Message(
        id="undo-cmd-1",
        role="user",
        content=(TextBlock(text=UNDO_TEXT),),
        source=PluginSource(plugin=UNDO_PLUGIN, source_command_id="cmd-1"),
    )


def _session_with_notes() -> tuple[Session, list[int]]:
    session = new_session(MemoryStore())
    append_chat_turn(session, "edit a.txt", "Edited.")
    notes = [session.append(_undo_note()).seq, session.append(cut_call_notice("r1")).seq]
    append_chat_turn(session, "and now?", "Reading it again.")
    return session, notes


def test_people_read_harness_notes_as_context_from_their_plugin():
    session, _ = _session_with_notes()
    text = render_human_transcript(session.events)
    assert f"Context from undo: {UNDO_TEXT}" in text
    assert f"Context from output-limit: {CUT_TEXT_CALL_NOT_RUN}" in text
    assert "User: [undo]" not in text and "User: [NOT_RUN]" not in text
    assert "User: edit a.txt" in text and "User: and now?" in text  # prompts stay the person's
    markdown = render_markdown(session.header, session.events)
    assert f"### Context from undo\n\n{UNDO_TEXT}" in markdown
    assert f"### Context from output-limit\n\n{CUT_TEXT_CALL_NOT_RUN}" in markdown
    assert "### User\n\nedit a.txt" in markdown


def test_the_model_reads_harness_notes_as_the_user_turn_they_are():
    """Byte for byte what every model-facing text said before the human label existed."""
    session, notes = _session_with_notes()
    messages = [session.events[seq].data for seq in notes]
    old = [f"User: {UNDO_TEXT}", f"User: {CUT_TEXT_CALL_NOT_RUN}"]
    assert [render_message(m) for m in messages] == old
    assert [render_node(session.events, seq) for seq in notes] == old  # history_read, recall
    assert [as_transcript(m).text() for m in messages] == old  # a compact call's slice
    assert slice_text(messages) == "\n".join(old)  # a recallable pass's slice


def test_a_plugin_name_shows_on_one_line_escaped():
    note = Message(
        id="n",
        role="user",
        content=(TextBlock(text="hello"),),
        source=PluginSource(plugin="evil\x1b[31m\nname"),
    )
    session = new_session(MemoryStore())
    session.append(note)
    assert render_human_transcript(session.events) == "Context from evil\\x1b[31m name: hello"


def test_find_labels_a_hit_in_a_harness_note_as_context_from_its_plugin():
    """What people search is what they read: the undo note and the output-limit notice are
    ``context`` from their plugin, not something the person typed (``user``)."""
    session, notes = _session_with_notes()
    undo = find_in_transcript(session.events, "undid")
    limit = find_in_transcript(session.events, "NOT_RUN")
    assert [(h.seq, h.kind, h.plugin) for h in undo] == [(notes[0], "context", "undo")]
    assert [(h.seq, h.kind, h.plugin) for h in limit] == [(notes[1], "context", "output-limit")]
    prompts = find_in_transcript(session.events, "edit a.txt")
    assert [(h.kind, h.plugin) for h in prompts] == [("user", None)]  # the person's prompt
