"""Where compaction may cut the surface: the one rule every cut follows (docs/compaction.md,
"Layout").

A cut between two surface nodes is *clean* when it separates nothing that belongs together:

- no tool call is left open before it (its result would be on the other side);
- the node after it is not an attachment note of the prompt before it: the notes a prompt's
  ``@path`` mentions attach follow it as user-role messages of plugin ``attach``
  (``ATTACH_PLUGIN``), one each, and a cut between them left the verbatim tail starting with
  file dumps and no request (the request and its first note went into the checkpoint). A note
  belongs to the node before it when that node is the prompt or another of its notes; one
  whose prompt is already shadowed (an older dsh split them) binds to nothing.

The retain boundary also never parts a prompt (with its notes) from the assistant message that
answers it (``answered_group_start``): a state covering only the prompt listed an answered
request under "Next steps" while its answer opened the tail (an audit saw it in every run).

A ``!cmd`` line's output is no separate message: it goes into the prompt's own text. The retain
boundary (``retain_boundary``, behind every backend's pass and overflow recovery's) and the
recallable chunking's edges (every stub slice) only cut where ``clean_cut_after`` holds.
"""

from __future__ import annotations

from dsh.events import (
    PROMPT_NOTE_PLUGINS,
    AssistantMessageEvent,
    Event,
    Message,
    PluginSource,
    UserMessageEvent,
    UserSource,
)
from dsh.surface.session import Session


def is_prompt(event: Event) -> bool:
    """A prompt a person typed (not a note dsh gave the model as a user turn)."""
    return isinstance(event, UserMessageEvent) and isinstance(event.data.source, UserSource)


def is_attachment(message: Message) -> bool:
    """A note that belongs to the prompt before it (a user-role message): what an ``@path``
    mention attached, or the compacted messages matching its words (``PROMPT_NOTE_PLUGINS``)."""
    return isinstance(message.source, PluginSource) and message.source.plugin in PROMPT_NOTE_PLUGINS


def is_attachment_note(event: Event) -> bool:
    """A ``user/message`` event holding an attachment note (``is_attachment``)."""
    return isinstance(event, UserMessageEvent) and is_attachment(event.data)


def attached_to_previous(session: Session, position: int) -> bool:
    """Whether the surface node at ``position`` is an attachment note of the prompt before it
    (that node is the prompt or another of its notes): no cut may fall before it."""
    if position <= 0 or position >= len(session.nodes):
        return False
    events, nodes = session.events, session.nodes
    if not is_attachment_note(events[nodes[position]]):
        return False
    before = events[nodes[position - 1]]
    return is_prompt(before) or is_attachment_note(before)


def clean_cut_before(session: Session, position: int) -> bool:
    """Whether a cut right before the surface node at ``position`` (``len(nodes)``: after the
    last) is clean: no tool call open, no prompt parted from its attachment notes."""
    if position <= 0:
        return True
    nodes = session.nodes
    return session.tool_pairing_balanced_after(nodes[position - 1]) and not attached_to_previous(
        session, position
    )


def clean_cut_after(session: Session, seq: int) -> bool:
    """Whether a cut right after the current node ``seq`` is clean (``clean_cut_before``)."""
    return clean_cut_before(session, session.surface.position(seq) + 1)


def answered_group_start(session: Session, position: int) -> int | None:
    """When the surface node at ``position`` is an assistant message right after a prompt and
    its attachment notes, the position of that prompt (a cut before ``position`` would part the
    request from its answer); else None."""
    nodes, events = session.nodes, session.events
    if position <= 0 or position >= len(nodes):
        return None
    if not isinstance(events[nodes[position]], AssistantMessageEvent):
        return None
    start = position - 1
    while attached_to_previous(session, start):
        start -= 1
    return start if is_prompt(events[nodes[start]]) else None


def retain_boundary(session: Session, retain_tokens: int) -> int:
    """Index of the first tail node to keep: the cut before it is clean (no tool call split
    from its result, no prompt from its attachment notes) and the tail holds at least
    ``retain_tokens`` — but for a prompt group too large to keep, which the walk ended in: it
    goes whole. 0 means nothing to cut.

    The walk back from the end stops at the first node that brings the tail to
    ``retain_tokens``. Ended among a prompt's attachment notes, the cut moves before the prompt
    when the part of the group the walk had not reached (the prompt and its earlier notes)
    is at most ``retain_tokens``; else after its last note, so the prompt and every note go
    into the compacted history together: the tail stays under about twice its size, and the
    big files an earlier prompt attached do not hold the request above the threshold. Then it
    moves earlier until no tool call is left open (a prompt's notes carry none). A cut that
    lands between a prompt (and its notes) and the assistant message answering it moves the
    same way: before the prompt when the group is at most ``retain_tokens``, else past the
    answer (to the next clean cut: its calls' results go with it), so the compacted slice never
    ends on a request whose answer opens the tail."""
    nodes = session.nodes
    keep = len(nodes)
    kept = 0
    while keep > 0 and kept < retain_tokens:
        keep -= 1
        kept += session.node_tokens(nodes[keep])
    if attached_to_previous(session, keep):
        start = keep
        while attached_to_previous(session, start):
            start -= 1  # back to the prompt
        if sum(session.node_tokens(seq) for seq in nodes[start:keep]) <= retain_tokens:
            keep = start
        else:
            while attached_to_previous(session, keep):
                keep += 1  # past the last note
    while not clean_cut_before(session, keep):
        keep -= 1
    asked = answered_group_start(session, keep)
    if asked is not None:  # the cut would part a prompt from its answer
        if sum(session.node_tokens(seq) for seq in nodes[asked:keep]) <= retain_tokens:
            keep = asked
        else:
            end = keep + 1  # the answer goes with its prompt, up to the next clean cut
            while end < len(nodes) and not clean_cut_before(session, end):
                end += 1
            keep = end if clean_cut_before(session, end) else asked
    while not clean_cut_before(session, keep):
        keep -= 1
    return keep
