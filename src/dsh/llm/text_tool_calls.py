"""Tool calls a model wrote as text instead of in the API's tool-call syntax.

Small local models often answer a tool prompt with a fenced ````` ```json {"name": …,
"arguments": …} ``` ````` block, or with their chat template's ``<tool_call>{…}</tool_call>``
(Qwen, Hermes) when the server does not parse it, so the server returns plain content. With
``provider.text_tool_calls`` on, a reply whose WHOLE text is one or more such objects, separated
only by whitespace, becomes tool calls. Each object stands bare, in a ``<tool_call>`` tag (one per
tag, as the templates write them), or in a ``` / ```json fence or a ``<tools>`` tag, either of
which may hold several, one after another: Qwen2.5-Coder 1.5B on llama.cpp wrote a read and an
edit one per line in one fence, and in another reply in ``<tools>`` — the tag its template puts
around the tool signatures. Llama 3.x writes ``{"name": …, "parameters": …}`` (``"type":
"function"`` may come with it), bare or after ``<|python_tag|>``; Mistral writes
``[TOOL_CALLS][{…}, …]``: those two wrappers hold the rest of the reply (an end-of-turn token
may close it), and a JSON list of calls counts as its calls, there as bare or in any wrapper.
It does so only if every object has exactly the keys ``name`` and ``arguments`` (or
``parameters``; an object) and ``accepts`` takes each (the agent loop: a registered tool; its
arguments are then checked as any call's are). Anything else stays text: prose around the
JSON, a call ``accepts`` refuses, a truncated object.

A small model also writes a call in a fence in the middle of prose ("Let me search the
history: ```json {…}``` It returns: …"), then goes on to make up what the call returned. With
``in_prose`` (the agent loop: a registered tool of kind ``read``) such a reply's FIRST wrapper
that holds only valid calls, every one of them accepted by ``in_prose``, becomes those calls:
the prose before it stays the reply's text, and what follows it — the result the model imagined
— is dropped from the message (the log keeps the whole reply in ``recoveredFromText``). A call
that writes, runs a command or reaches an MCP server is never taken out of prose: there it may
be an example shown to the person, not a request.

Any other call written in the text is not run: a write, a command or an MCP call inside prose,
a call beside others of which one names no tool or is refused, a call after the wrapper taken
out of prose. ``calls_not_run`` names them (every object with exactly ``name`` and
``arguments`` naming a tool ``accepts`` takes, bare or in a wrapper, anywhere in the text, but
in the wrapper that ran), so people are told the reply's words were not acted on.

A reply cut at the output limit may end in the middle of such a call, so it no longer parses:
``starts_like_a_call`` tells the loop its text began as one (a JSON object, bare or fenced, or a
``<tool_call>`` or ``<tools>`` tag), so the model can be told its call was cut and not run.
A whole reply that begins as a call, its first key a call's, but is not valid JSON (a missing
``}``, a stray ``]``) was not cut: ``unreadable_call`` says why, so the model can be told to send
it again. One common template artefact is read as meant: ``{{"name": …}}`` (an extra opening
brace, and maybe an extra closing one) is the call inside. A whole reply of calls some of which
name no tool ``accepts`` takes: ``unknown_tool_calls`` gives them, so the model can be told.

Recovery is a pure function of the text, so a replayed reply recovers the same calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dsh.events import Message, TextBlock, ToolCallBlock

Accepts = Callable[[str, str], bool]
"""``accepts(name, arguments_json)``: True iff the text holds a call to that (the agent loop:
``name`` is a registered tool)."""

Wrapper = tuple[re.Pattern[str], re.Pattern[str], bool]
"""A wrapper around calls written as text: its opening, its closing, whether it may hold several."""
_TO_THE_END = re.compile(r"(?:<\|eom_id\|>|<\|eot_id\|>|</s>)?\s*\Z")
"""The closing of a wrapper that holds the rest of the reply (an end-of-turn token may follow)."""
WRAPPERS: tuple[Wrapper, ...] = (
    (re.compile(r"```[ \t]*(?:json)?[ \t]*\n?", re.IGNORECASE), re.compile("```"), True),
    (re.compile(r"<tools>", re.IGNORECASE), re.compile(r"</tools>", re.IGNORECASE), True),
    (re.compile(r"<tool_call>", re.IGNORECASE), re.compile(r"</tool_call>", re.IGNORECASE), False),
    (re.compile(r"<\|python_tag\|>"), _TO_THE_END, True),  # Llama 3.x
    (re.compile(r"\[TOOL_CALLS\]"), _TO_THE_END, True),  # Mistral
)
_CALL_START = re.compile(
    r"\s*(?:```[ \t]*(?:json)?\s*)?"
    r"(?:\{|\[\s*\{|<tool_call>|<tools>|<\|python_tag\|>|\[TOOL_CALLS\])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class TextToolCall:
    name: str
    arguments: str
    """The arguments as a JSON object string (re-encoded from what the model wrote)."""


def recover_tool_calls(text: str, accepts: Accepts) -> list[TextToolCall] | None:
    """The tool calls ``text`` consists of, or None if it is anything but valid calls."""
    objects = _json_objects(text)
    if not objects:
        return None
    calls = []
    for obj in objects:
        call = _as_call(obj)
        if call is None or not accepts(call.name, call.arguments):
            return None
        calls.append(call)
    return calls


def unknown_tool_calls(text: str, accepts: Accepts) -> list[TextToolCall]:
    """The calls of ``text`` that ``accepts`` refuses, when its whole text is calls (as
    ``recover_tool_calls`` reads it); empty otherwise."""
    calls = [_as_call(value) for value in _json_objects(text) or ()]
    if not calls or any(call is None for call in calls):
        return []
    return [c for c in calls if c is not None and not accepts(c.name, c.arguments)]


_CALL_OBJECT = re.compile(r'\[?\s*\{+\s*"(?:name|arguments|parameters|type)"\s*:')
"""The start of a call object (or of a list of them), its first key a call's."""
_CLOSINGS = re.compile(r"(?:```|</tools>|</tool_call>)\s*\Z", re.IGNORECASE)
_ARGUMENTS = re.compile(r'"(?:arguments|parameters)"\s*:')


def unreadable_call(text: str) -> str | None:
    """Why ``text`` is a call that cannot be read: the whole text begins as a call (bare or
    after a wrapper's opening, its first key a call's) whose JSON is not valid, or is followed
    by nothing but stray brackets. None when it is not such a text."""
    position = len(text) - len(text.lstrip())
    for opening, _, _ in WRAPPERS:
        if (opened := opening.match(text, position)) is not None:
            position = opened.end() + len(text[opened.end() :]) - len(text[opened.end() :].lstrip())
            break
    if _CALL_OBJECT.match(text, position) is None or _ARGUMENTS.search(text) is None:
        return None
    try:
        _DECODER.raw_decode(text, _unbraced(text, position))
    except ValueError as exc:
        at = getattr(exc, "pos", None)
        if not isinstance(at, int) or at >= len(text.rstrip()):
            return f"it ends at character {len(text.rstrip())} before the JSON is closed"
        found = text[at]
        return f"not valid JSON at character {at}: {getattr(exc, 'msg', exc)}, found {found!r}"
    except RecursionError:
        return "not valid JSON: nested too deeply"
    _, end = _decode(text, _unbraced(text, position))
    rest = _CLOSINGS.sub("", text[end:]).strip()
    if rest and set(rest) <= set("}]),;"):
        return f"not valid JSON: {rest[0]!r} at character {text.index(rest[0], end)} is extra"
    return None


def _unbraced(text: str, position: int) -> int:
    """Where the call at ``position`` starts: after one extra ``{`` of ``{{"name": …``."""
    if text.startswith("{{", position) and _decode(text, position + 1)[1] >= 0:
        return position + 1
    return position


def starts_like_a_call(text: str) -> bool:
    """Whether ``text`` begins as a tool call written as text: a JSON object, bare or in a
    ``` / ```json fence, or a ``<tool_call>`` tag (what a cut reply's call starts with)."""
    return _CALL_START.match(text) is not None


@dataclass(frozen=True, slots=True)
class CallsInProse:
    before: str
    """The prose before the wrapper, stripped (may be empty)."""
    calls: list[TextToolCall]
    span: tuple[int, int]
    """Where the wrapper starts in the text, and where it ends."""


def recover_calls_in_prose(text: str, in_prose: Accepts) -> CallsInProse | None:
    """The calls of ``text``'s first wrapper (fence, ``<tool_call>`` or ``<tools>``) that holds
    only valid calls ``in_prose`` accepts, with the prose before it; None if no wrapper does."""
    position = 0
    while True:
        opening = _next_opening(text, position)
        if opening is None:
            return None
        wrapped = _wrapped(text, opening, WRAPPERS)
        assert wrapped is not None, "a wrapper opens there"
        inner, several, after = wrapped
        if after < 0:
            return None  # an unclosed wrapper: nothing after it can close either
        held = _json_objects(inner, wrappers=())
        if held and (several or len(held) == 1):
            calls = [_as_call(value) for value in held]
            if all(c is not None and in_prose(c.name, c.arguments) for c in calls):
                taken = [c for c in calls if c is not None]
                return CallsInProse(text[:opening].strip(), taken, (opening, after))
        position = after


def _next_opening(text: str, position: int) -> int | None:
    """Where the next wrapper opens at or after ``position``, or None."""
    found = [
        match.start()
        for opening, _, _ in WRAPPERS
        if (match := opening.search(text, position)) is not None
    ]
    return min(found, default=None)


@dataclass(frozen=True, slots=True)
class RecoveredReply:
    message: Message
    """The reply with its text turned into tool calls."""
    taken: tuple[int, int] | None = None
    """Where in the text the wrapper taken out of prose is (None: the whole text was calls)."""

    @property
    def from_prose(self) -> bool:
        """The calls were taken out of prose (``CallsInProse``): their wrapper closed and what
        followed it was dropped, so a reply cut at the output limit after them did not cut
        them."""
        return self.taken is not None


def recover_reply(
    message: Message, accepts: Accepts, id_prefix: str, *, in_prose: Accepts | None = None
) -> RecoveredReply | None:
    """``message`` with its text turned into tool calls (ids ``{id_prefix}-0``, ``-1``, …), or
    None when it already calls tools or its text is not exactly valid tool calls — nor, with
    ``in_prose``, prose around a wrapper of calls ``in_prose`` accepts (``CallsInProse``)."""
    if message.tool_calls():
        return None
    text = message.text()
    calls = recover_tool_calls(text, accepts)
    before = ""
    taken = None
    if calls is None and in_prose is not None:
        found = recover_calls_in_prose(text, in_prose)
        if found is not None:
            before, calls, taken = found.before, found.calls, found.span
    if calls is None:
        return None
    kept = tuple(b for b in message.content if not isinstance(b, TextBlock))
    prose = (TextBlock(text=before),) if before else ()
    blocks = tuple(
        ToolCallBlock(id=f"{id_prefix}-{i}", name=c.name, arguments=c.arguments)
        for i, c in enumerate(calls)
    )
    recovered = Message(
        id=message.id, role=message.role, content=kept + prose + blocks, source=message.source
    )
    return RecoveredReply(recovered, taken)


def calls_not_run(text: str, accepts: Accepts, recovered: RecoveredReply | None) -> list[str]:
    """The names of the calls written in ``text`` (the reply's whole text) that are not run:
    every call in it when nothing was recovered, those outside the wrapper taken out of prose,
    none when the whole text was calls (``recovered``: what ``recover_reply`` made of it)."""
    if recovered is not None:
        if recovered.taken is None:
            return []
        start, end = recovered.taken
        calls = calls_in_text(text[:start], accepts) + calls_in_text(text[end:], accepts)
    else:
        calls = calls_in_text(text, accepts)
    return [call.name for call in calls]


_BARE_CALL = re.compile(r'\{\s*"(?:name|arguments|parameters|type)"\s*:')
"""Where a bare call may begin among prose."""


def calls_in_text(text: str, accepts: Accepts) -> list[TextToolCall]:
    """Every tool call ``accepts`` takes written anywhere in ``text``, in order: a JSON object
    with exactly ``name`` and ``arguments``, bare among prose or in a wrapper (a fence,
    ``<tool_call>``, ``<tools>``: the objects are found where they stand)."""
    found: list[TextToolCall] = []
    position = 0
    while (start := _BARE_CALL.search(text, position)) is not None:
        value, end = _decode(text, start.start())
        if end < 0:  # not JSON (cut, or prose that looks like it): look further on
            position = start.start() + 1
            continue
        call = _as_call(value)
        if call is not None and accepts(call.name, call.arguments):
            found.append(call)
        position = end
    return found


def with_recovered_calls(
    message: Message, accepts: Accepts, id_prefix: str, *, in_prose: Accepts | None = None
) -> Message | None:
    """``recover_reply``'s message, or None."""
    found = recover_reply(message, accepts, id_prefix, in_prose=in_prose)
    return None if found is None else found.message


def _json_objects(text: str, wrappers: tuple[Wrapper, ...] = WRAPPERS) -> list[Any] | None:
    """The JSON objects ``text`` is made of (bare or in ``wrappers``, whitespace between), or
    None."""
    values: list[Any] = []
    position, end = 0, len(text)
    while True:
        while position < end and text[position].isspace():
            position += 1
        if position == end:
            return values
        wrapped = _wrapped(text, position, wrappers)
        if wrapped is not None:
            inner, several, position = wrapped
            held = None if position < 0 else _json_objects(inner, wrappers=())
            if not held or (len(held) > 1 and not several):
                return None
            values.extend(held)
        elif text[position] == "{":
            start = _unbraced(text, position)
            value, after = _decode(text, start)
            if after < 0:
                return None
            if start > position and text.startswith("}", after):
                after += 1  # the closing brace of ``{{…}}``
            position = after
            values.append(value)
        elif text[position] == "[":  # a list of calls (Mistral's, or bare)
            value, position = _decode(text, position)
            if position < 0 or not isinstance(value, list) or not value:
                return None
            values.extend(value)
        else:
            return None


def _closing_after_objects(
    text: str, position: int, closing: re.Pattern[str]
) -> tuple[int, int] | None:
    """Where ``closing`` starts and ends after the JSON objects (and whitespace) that follow
    ``position``, or None when something else comes first."""
    end = len(text)
    while True:
        while position < end and text[position].isspace():
            position += 1
        closed = closing.match(text, position)
        if closed is not None:
            return closed.start(), closed.end()
        if position == end or text[position] not in "{[":
            return None
        _, position = _decode(text, position)
        if position < 0:
            return None


def _wrapped(
    text: str, position: int, wrappers: tuple[Wrapper, ...]
) -> tuple[str, bool, int] | None:
    """If a wrapper opens at ``position``: what it holds, whether that may be several calls, and
    the index after its closing (-1 when it never closes); else None."""
    for opening, closing, several in wrappers:
        opened = opening.match(text, position)
        if opened is None:
            continue
        after = _closing_after_objects(text, opened.end(), closing)
        if after is not None:  # a closing inside a JSON string (a path "```") is not the end
            return text[opened.end() : after[0]], several, after[1]
        closed = closing.search(text, opened.end())
        if closed is None:
            return "", several, -1
        return text[opened.end() : closed.start()], several, closed.end()
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _decode(text: str, position: int) -> tuple[Any, int]:
    """One JSON value at ``position`` and the index after it; (None, -1) if there is none."""
    try:
        return _DECODER.raw_decode(text, position)
    except (ValueError, RecursionError):
        return None, -1


_CALL_KEYS = ({"name", "arguments"}, {"name", "parameters"})
"""The keys of a call written as text: ``parameters`` is Llama 3.x's (which may add
``"type": "function"``)."""


def _as_call(value: Any) -> TextToolCall | None:
    if not isinstance(value, dict):
        return None
    keys = set(value)
    if value.get("type") == "function":
        keys.discard("type")
    if keys not in _CALL_KEYS:
        return None
    name = value["name"]
    arguments = value["arguments" if "arguments" in keys else "parameters"]
    if isinstance(arguments, str):  # some models send the arguments as a JSON string
        inner = arguments.strip()
        arguments, used = _decode(inner, 0)
        if used != len(inner):
            return None
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return None
    encoded = json.dumps(arguments, ensure_ascii=False)
    try:
        encoded.encode("utf-8")  # a lone surrogate (\ud800) cannot be logged: leave it text
    except UnicodeEncodeError:
        return None
    return TextToolCall(name=name, arguments=encoded)
