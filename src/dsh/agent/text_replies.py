"""What the agent loop reads in a reply's text (``provider.text_tool_calls``; docs/local-models.md,
"Tool calls written as text").

``read_reply``: the tool calls written as text that run (``dsh.llm.text_tool_calls``: a reply
that is only calls, or read-only calls in a wrapper inside prose), and the names of those that
do not (``calls_not_run``: a write, a command or an MCP call inside prose, a call beside one
naming no tool, a call after the wrapper that ran), logged on the reply (``assistant/message``'s
``textCallsNotRun``) only when the route reads text calls and the reply made no tool call of
the API's own. A replayed reply takes both from its log (``Finish.text_calls``,
``Finish.text_calls_not_run``), so it replays as it ran.

A small model that writes ``<tools>{"name": "edit_file", …}</tools>`` in its answer, then
"the tests passed", must not be believed: people see one line naming the calls not run
(``not_run_note``), a dim note under the reply in the transcripts (the terminal UI, the web
page, ``dsh sessions show``, an export) and a warning after ``dsh run``'s turn
(``turn_not_run_warning``). Nothing runs unasked. The model is told
(``not_run_notice``, a ``user/message`` of the plugin ``TEXT_CALLS_NOTICE``) only when the
turn goes on anyway (the reply's other calls ran, ``dsh.agent.step_outcome``): a reply that
ends the turn is not made to go on, and a model that writes no call in its text sees nothing
new. Nor is it told after the last step ``max_steps`` allows: no model call would read the
note, so none is logged; the turn ends there, and ``dsh run`` warns of the calls not run and
that ``max_steps`` stopped the turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh.agent.tool_calls import names_read_only
from dsh.agent.unread_calls import unknown_tools_notice, unreadable_notice
from dsh.events import AssistantMessageEvent, Message, PluginSource, TextBlock
from dsh.llm.assemble import StreamAssembler
from dsh.llm.text_tool_calls import (
    calls_not_run,
    recover_reply,
    recover_tool_calls,
    unknown_tool_calls,
    unreadable_call,
)
from dsh.llm.types import TEXT_CALLS_NOTICE
from dsh.surface import Session
from dsh.tools.registry import ToolRegistry
from dsh.transcript.render import not_run_note


@dataclass(frozen=True, slots=True)
class ReadReply:
    message: Message
    """The reply as it is logged and sent back: its text calls that run turned into calls."""
    recovered_from_text: str | None
    """The text the calls were recovered from (None: none were)."""
    from_prose: bool
    """The calls were taken out of prose (they run even when the reply was then cut)."""
    not_run: tuple[str, ...]
    """The tool names of the calls written in the text that are not run, in order."""
    unread: Message | None = None
    """What the model is told when the whole reply is a call written as text that cannot run:
    not valid JSON, or naming a tool that does not exist (``dsh.agent.unread_calls``)."""


def read_reply(
    message: Message,
    assembler: StreamAssembler,
    configured: bool,
    id_prefix: str,
    tools: ToolRegistry,
) -> ReadReply:
    """``message`` (the reply ``assembler`` put together) as the loop logs it: with
    ``configured`` (the route's ``text_tool_calls``), unless the provider said otherwise (a
    replay), its text calls that run become calls (ids ``{id_prefix}-N``).

    A call written as text names a registered tool (arguments its schema refuses are answered
    like any call's, ``INVALID_ARGUMENT`` with nothing run, so the model learns what to fix;
    one such call used to leave the whole reply text); one inside prose is taken out of it only
    if its tool only reads (``kind == "read"``), so running a call the model merely showed
    changes nothing."""

    def accepts(name: str, arguments: str) -> bool:
        return tools.get(name) is not None

    def in_prose(name: str, arguments: str) -> bool:
        return names_read_only(tools, name)

    enabled = assembler.text_calls if assembler.text_calls is not None else configured
    text = message.text()
    unread = _unread(message, tools) if enabled and not message.tool_calls() else None
    recovered = (
        recover_reply(message, accepts, id_prefix, in_prose=in_prose)
        if enabled and unread is None
        else None
    )
    if assembler.text_calls_not_run is not None:  # a replay: as its log named them
        not_run = assembler.text_calls_not_run
    elif enabled and not message.tool_calls():
        not_run = tuple(calls_not_run(text, accepts, recovered))
    else:
        not_run = ()
    return ReadReply(
        message=message if recovered is None else recovered.message,
        recovered_from_text=text if recovered is not None else None,
        from_prose=recovered is not None and recovered.from_prose,
        not_run=not_run,
        unread=unread,
    )


def _unread(message: Message, tools: ToolRegistry) -> Message | None:
    """What the model is told when ``message``'s whole text is a call written as text that
    cannot run: calls naming a tool that does not exist, or one that is not valid JSON."""
    text = message.text()

    def known(name: str, arguments: str) -> bool:
        return tools.get(name) is not None

    if unknown := unknown_tool_calls(text, known):
        calls = len(recover_tool_calls(text, lambda name, arguments: True) or ())
        return unknown_tools_notice(message.id, unknown, calls, tools.names)
    if recover_tool_calls(text, known) is None and (why := unreadable_call(text)) is not None:
        return unreadable_notice(message.id, why)
    return None


def turn_not_run_warning(session: Session, turn: int) -> str | None:
    """What ``dsh run`` warns after turn ``turn`` of ``session``: the calls its replies wrote
    in their text that were not run (None: there were none)."""
    names: list[str] = []
    for reply in reversed(session.of_type(AssistantMessageEvent)):  # the turn's are the last
        if reply.data.turn != turn:
            break
        names[:0] = reply.data.text_calls_not_run
    return f"turn {turn}: {not_run_note(names)}" if names else None


def not_run_notice(reply_id: str, names: Sequence[str]) -> Message:
    """The message that tells the model that its reply ``reply_id`` wrote the calls ``names``
    as text and they were not run (logged after the calls of that reply that ran)."""
    one = len(names) == 1
    calls = "1 tool call" if one else f"{len(names)} tool calls"
    it, was = ("it", "was") if one else ("them", "were")
    text = (
        f"[NOT_RUN] Your reply also wrote {calls} as text ({', '.join(dict.fromkeys(names))}); "
        f"{it} {was} not run: a call written inside prose runs only when it only reads. To run "
        f"{it}, call the tool, or reply with nothing but the call{'' if one else 's'}."
    )
    return Message(
        id=f"{reply_id}-not-run",
        role="user",
        content=(TextBlock(text=text),),
        source=PluginSource(plugin=TEXT_CALLS_NOTICE),
    )
