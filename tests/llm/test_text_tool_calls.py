"""Recovering tool calls that a model wrote as text: only exact, valid calls are recovered."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.events import Message, ModelSource, ReasoningBlock, TextBlock, ToolCallBlock
from dsh.llm.text_tool_calls import (
    TextToolCall,
    recover_calls_in_prose,
    recover_tool_calls,
    starts_like_a_call,
    with_recovered_calls,
)

SCHEMAS: dict[str, dict[str, Any]] = {
    "read_file": {"path": str, "limit": int},
    "bash": {"command": str},
}
"""The registered tools of these tests: name → accepted keys and their types (all optional
but the first)."""


def accepts(name: str, arguments: str) -> bool:
    schema = SCHEMAS.get(name)
    if schema is None:
        return False
    args = json.loads(arguments)
    first = next(iter(schema))
    return (
        isinstance(args, dict)
        and first in args
        and all(k in schema and type(v) is schema[k] for k, v in args.items())
    )


def test_a_fenced_json_call_is_recovered():
    text = '```json\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```'
    assert recover_tool_calls(text, accepts) == [TextToolCall("read_file", '{"path": "notes.txt"}')]


def test_a_fence_holding_several_calls_one_per_line_is_recovered_as_each_call():
    """Qwen2.5-Coder 1.5B on llama.cpp (``--jinja``) answered a fix-this-file prompt with a read
    and an edit in one fence, one object per line; each is a call, in order."""
    text = (
        '```json\n{"name": "read_file", "arguments": {"path": "calc.py"}}\n'
        '{"name": "bash", "arguments": {"command": "pytest -q"}}\n```'
    )
    assert recover_tool_calls(text, accepts) == [
        TextToolCall("read_file", '{"path": "calc.py"}'),
        TextToolCall("bash", '{"command": "pytest -q"}'),
    ]
    for broken in (
        text.replace('\n{"name": "bash"', '\nthen {"name": "bash"'),  # prose between
        text.replace('"bash"', '"rm_rf"'),  # one unknown tool spoils the reply
        text.replace("}}\n{", "}}\n[1]\n{"),  # a non-object between them
        "```json\n```",  # an empty fence
    ):
        assert recover_tool_calls(broken, accepts) is None, broken


def test_calls_in_the_tools_tag_the_template_puts_around_signatures_are_recovered():
    """Qwen2.5-Coder 1.5B on llama.cpp also wrapped its calls, one per line, in ``<tools>``: the
    tag its chat template puts around the tool signatures it is shown."""
    text = (
        '<tools>\n{"name": "read_file", "arguments": {"path": "/tmp/rm1/calc.py"}}\n'
        '{"name": "bash", "arguments": {"command": "pytest"}}\n</tools>'
    )
    assert recover_tool_calls(text, accepts) == [
        TextToolCall("read_file", '{"path": "/tmp/rm1/calc.py"}'),
        TextToolCall("bash", '{"command": "pytest"}'),
    ]
    assert starts_like_a_call(text[:20])
    for broken in (
        text.removesuffix("</tools>"),  # never closed
        text.replace("<tools>\n", "<tools>\nCalling: "),
        "<tools></tools>",
        '<tools>{"name": "read_file", "arguments": {"path": "a"}, "id": 1}</tools>',
    ):
        assert recover_tool_calls(broken, accepts) is None, broken


def test_calls_in_a_chat_templates_tool_call_tags_are_recovered():
    """Qwen and Hermes templates wrap each call in ``<tool_call>`` tags; a server that does not
    parse them (llama.cpp without --jinja, vLLM without a tool parser) returns them as text."""
    text = (
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>\n'
        '<TOOL_CALL>{"name": "read_file", "arguments": {"path": "a"}}</TOOL_CALL>'
    )
    assert recover_tool_calls(text, accepts) == [
        TextToolCall("bash", '{"command": "ls"}'),
        TextToolCall("read_file", '{"path": "a"}'),
    ]


def test_tool_call_tags_around_anything_but_one_valid_call_stay_text():
    call = '{"name": "bash", "arguments": {"command": "ls"}}'
    for text in (
        f"<tool_call>{call}",  # never closed
        f"<tool_call>{call}{call}</tool_call>",  # two calls in one tag
        f"<tool_call>Let me run it: {call}</tool_call>",
        "<tool_call></tool_call>",
        f"I will call it. <tool_call>{call}</tool_call>",
    ):
        assert recover_tool_calls(text, accepts) is None, text


def test_text_cut_inside_a_call_starts_like_a_call_and_prose_does_not():
    call = '{"name": "bash", "arguments": {"command": "echo x >> log.txt"}}'
    cut = [
        f'{call}\n{call}\n{{"name": "ba',  # Qwen2.5-Coder 0.5B, cut after two whole calls
        '  {"name": "read_file", "argu',
        '```json\n{"name": "bash", "arguments": {"command": "ls',
        "```\n{",
        '<tool_call>\n{"name": "bash", "arguments": {"comm',
        "<TOOL_CALL>",
    ]
    assert all(starts_like_a_call(text) for text in cut)
    prose = ["The answer is {x}", "```python\nprint({})", 'Run: {"name": "bash"', ""]
    assert not any(starts_like_a_call(text) for text in prose)
    assert all(recover_tool_calls(text, accepts) is None for text in cut)


def test_bare_and_several_calls_and_string_arguments_are_recovered():
    text = (
        '{"name": "bash", "arguments": {"command": "ls"}}\n\n'
        '```\n{"name": "read_file", "arguments": "{\\"path\\": \\"a\\"}"}\n```'
    )
    calls = recover_tool_calls(text, accepts)
    assert calls == [
        TextToolCall("bash", '{"command": "ls"}'),
        TextToolCall("read_file", '{"path": "a"}'),
    ]


def test_prose_an_unknown_tool_bad_arguments_or_extra_keys_stay_text():
    call = '{"name": "bash", "arguments": {"command": "ls"}}'
    for text in (
        f"Sure! {call}",
        f"{call} and then I will read it.",
        '{"name": "rm_rf", "arguments": {}}',
        '{"name": "bash", "arguments": {"cmd": "ls"}}',
        '{"name": "bash", "arguments": {"command": "ls"}, "id": 1}',
        '```json\n{"name": "bash", "arguments": {"command": "ls"}}',  # fence never closed
        '```python\nprint("hi")\n```',
        '{"name": "bash", "arguments": {"command": NaN}}',
        '{"name": "bash", "arguments": {"command": "\\ud800"}}',  # not loggable as UTF-8
        "",
        "   ",
    ):
        assert recover_tool_calls(text, accepts) is None, text


def _message(*blocks: Any) -> Message:
    return Message(id="a-1-1", role="assistant", content=blocks, source=ModelSource("p", "m"))


def test_the_recovered_message_keeps_reasoning_and_replaces_the_text_with_calls():
    text = '{"name": "bash", "arguments": {"command": "pwd"}}'
    message = _message(ReasoningBlock("let me look"), TextBlock(text))
    recovered = with_recovered_calls(message, accepts, "text-1-1")
    assert recovered is not None
    assert recovered.content == (
        ReasoningBlock("let me look"),
        ToolCallBlock(id="text-1-1-0", name="bash", arguments='{"command": "pwd"}'),
    )
    already = _message(TextBlock(text), ToolCallBlock(id="c", name="bash", arguments="{}"))
    assert with_recovered_calls(already, accepts, "x") is None


# ---- properties -----------------------------------------------------------------------------

_values = st.one_of(
    st.text(max_size=12), st.integers(-5, 5), st.booleans(), st.none(), st.just([1, "x"])
)
_valid_calls = st.one_of(
    st.builds(
        lambda p, limit: ("read_file", {"path": p, **({} if limit is None else {"limit": limit})}),
        st.text(max_size=20),
        st.none() | st.integers(0, 10**6),
    ),
    st.builds(lambda c: ("bash", {"command": c}), st.text(max_size=20)),
)
_spaces = st.sampled_from(["", " ", "\n", "\n\n", "\t \n"])


def _render(name: str, args: dict[str, Any], fenced: int, indent: int | None) -> str:
    body = json.dumps({"name": name, "arguments": args}, indent=indent, ensure_ascii=False)
    return [
        body,
        f"```json\n{body}\n```",
        f"```\n{body}\n```",
        f"```JSON {body}```",
        f"<tool_call>\n{body}\n</tool_call>",
    ][fenced]


@st.composite
def _replies(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    calls = draw(st.lists(_valid_calls, min_size=1, max_size=3))
    if draw(st.booleans()):  # every call in one fence, one after another
        bodies = [_render(n, a, 0, draw(st.sampled_from([None, 2]))) for n, a in calls]
        return "```json\n" + "".join(b + draw(_spaces) for b in bodies) + "```", calls
    parts = [
        _render(n, a, draw(st.integers(0, 4)), draw(st.sampled_from([None, 2]))) for n, a in calls
    ]
    gaps = [draw(_spaces) for _ in range(len(parts) + 1)]
    gaps[1:-1] = [g or "\n" for g in gaps[1:-1]]
    text = gaps[0] + "".join(p + g for p, g in zip(parts, gaps[1:], strict=True))
    return text, calls


def test_a_fence_inside_an_argument_does_not_end_the_fenced_call():
    """A path of three backticks closed the fence at the first ``` found, inside the JSON
    string, and the call was lost (a draw of the property test below found it)."""
    text = '```json\n{"name": "read_file", "arguments": {"path": "```"}}```'
    (call,) = recover_tool_calls(text, accepts) or []
    assert (call.name, json.loads(call.arguments)) == ("read_file", {"path": "```"})


@settings(max_examples=200, deadline=None)
@given(_replies())
def test_text_that_is_exactly_valid_calls_recovers_exactly_those_calls(reply):
    text, calls = reply
    recovered = recover_tool_calls(text, accepts)
    assert recovered is not None
    assert [(c.name, json.loads(c.arguments)) for c in recovered] == calls


_breakers = st.sampled_from(
    [
        ("prefix", "Here is the call: "),
        ("suffix", " Let me know!"),
        ("suffix", "\n```"),
        ("unknown", None),
        ("bad-arg", None),
        ("extra-key", None),
        ("truncate", None),
    ]
)


@settings(max_examples=300, deadline=None)
@given(_replies(), _breakers, st.data())
def test_no_recovery_from_text_that_is_not_exactly_valid_calls(reply, breaker, data):
    text, calls = reply
    kind, extra = breaker
    if kind == "prefix":
        broken = extra + text.lstrip()
    elif kind == "suffix":
        broken = text.rstrip() + extra
    elif kind == "truncate":
        cut = data.draw(st.integers(1, len(text.strip()) - 1))
        broken = text.strip()[:cut]
        if recover_tool_calls(broken, accepts) is not None:
            # Cutting between two whole calls leaves valid calls: only a strict prefix of them.
            assert len(recover_tool_calls(broken, accepts) or []) < len(calls)
            return
    else:
        i = data.draw(st.integers(0, len(calls) - 1))
        name, args = calls[i]
        if kind == "unknown":
            name = data.draw(st.text(min_size=1, max_size=8).filter(lambda n: n not in SCHEMAS))
        elif kind == "bad-arg":
            args = {**args, data.draw(st.sampled_from(["nope", "path", "command"])): 1.5}
        bad = {"name": name, "arguments": args}
        if kind == "extra-key":
            bad["id"] = data.draw(_values)
        rendered = [json.dumps({"name": n, "arguments": a}) for n, a in calls]
        rendered[i] = json.dumps(bad)
        broken = "\n".join(rendered)
    assert recover_tool_calls(broken, accepts) is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_recovers_only_when_every_piece_is_a_registered_valid_call(text):
    recovered = recover_tool_calls(text, accepts)
    if recovered is not None:
        assert recovered and all(accepts(c.name, c.arguments) for c in recovered)
        assert all(c.name in SCHEMAS for c in recovered)


# ---- calls written inside prose: read-only tools only ---------------------------------------


def reads(name: str, arguments: str) -> bool:
    """The tools of these tests that may be taken out of prose: read_file alone."""
    return name == "read_file" and accepts(name, arguments)


READ_CALL = '{"name": "read_file", "arguments": {"path": "notes.txt"}}'


def test_a_fenced_read_call_inside_prose_is_recovered_with_the_prose_before_it():
    text = f"Let me look at the notes first.\n```json\n{READ_CALL}\n```\nIt says: made up."
    found = recover_calls_in_prose(text, reads)
    assert found is not None and found.before == "Let me look at the notes first."
    assert found.calls == [TextToolCall("read_file", '{"path": "notes.txt"}')]


def test_a_call_in_prose_that_may_change_something_stays_text():
    bash = '{"name": "bash", "arguments": {"command": "rm -rf build"}}'
    for text in (
        f"You could run:\n```json\n{bash}\n```\nto clean up.",
        f"First\n```json\n{READ_CALL}\n{bash}\n```",  # one wrapper, a write among its calls
    ):
        assert recover_calls_in_prose(text, reads) is None, text


def test_the_first_wrapper_holding_calls_counts_and_code_fences_before_it_are_skipped():
    text = (
        'Here is the code:\n```python\nprint("hi")\n```\nNow the file:\n'
        f"<tool_call>{READ_CALL}</tool_call> and "
        '```json\n{"name": "read_file", "arguments": {"path": "other.txt"}}\n```'
    )
    found = recover_calls_in_prose(text, reads)
    assert found is not None
    assert [c.arguments for c in found.calls] == ['{"path": "notes.txt"}']
    assert found.before.endswith("Now the file:")


def test_an_unclosed_wrapper_or_a_bare_object_in_prose_stays_text():
    for text in (
        f"Let me look:\n```json\n{READ_CALL}",
        f"Let me look: {READ_CALL} and that is all.",
        f"Two in one tag <tool_call>{READ_CALL}{READ_CALL}</tool_call>",
    ):
        assert recover_calls_in_prose(text, reads) is None, text


def test_a_message_recovered_from_prose_keeps_its_prose_then_the_calls():
    text = f"Checking.\n```\n{READ_CALL}\n```\nResult: 42"
    message = _message(ReasoningBlock("hmm"), TextBlock(text))
    recovered = with_recovered_calls(message, accepts, "text-1-1", in_prose=reads)
    assert recovered is not None
    assert recovered.content == (
        ReasoningBlock("hmm"),
        TextBlock("Checking."),
        ToolCallBlock(id="text-1-1-0", name="read_file", arguments='{"path": "notes.txt"}'),
    )
    assert with_recovered_calls(message, accepts, "text-1-1") is None  # without in_prose


_PROSE = st.text(st.characters(blacklist_characters="`<"), max_size=60)
"""Prose that opens no wrapper of its own."""


@given(_PROSE, st.text(max_size=60))
def test_prose_around_a_read_call_fence_never_changes_which_call_is_recovered(
    before: str, after: str
) -> None:
    found = recover_calls_in_prose(f"{before}\n```json\n{READ_CALL}\n```\n{after}", reads)
    assert found is not None
    assert found.calls == [TextToolCall("read_file", '{"path": "notes.txt"}')]
    assert found.before == before.strip()


LLAMA_READ = '{"name": "read_file", "parameters": {"path": "f.txt"}}'
LLAMA_BASH = '{"type": "function", "name": "bash", "parameters": {"command": "ls"}}'


def test_llama_calls_with_parameters_bare_or_after_the_python_tag_are_recovered():
    expected = [TextToolCall("read_file", '{"path": "f.txt"}')]
    for text in (
        LLAMA_READ,
        f"<|python_tag|>{LLAMA_READ}",
        f"<|python_tag|>{LLAMA_READ}<|eom_id|>",
    ):
        assert recover_tool_calls(text, accepts) == expected, text
    assert recover_tool_calls(f"<|python_tag|>{LLAMA_READ}\n{LLAMA_BASH}", accepts) == [
        *expected,
        TextToolCall("bash", '{"command": "ls"}'),
    ]
    assert starts_like_a_call('<|python_tag|>{"name": "read_fi')


def test_mistral_and_bare_lists_of_calls_are_recovered():
    both = f'[{READ_CALL}, {{"name": "bash", "arguments": {{"command": "ls"}}}}]'
    expected = [
        TextToolCall("read_file", '{"path": "notes.txt"}'),
        TextToolCall("bash", '{"command": "ls"}'),
    ]
    assert recover_tool_calls(f"[TOOL_CALLS]{both}", accepts) == expected
    assert recover_tool_calls(f"[TOOL_CALLS] {both}</s>", accepts) == expected
    assert recover_tool_calls(both, accepts) == expected
    assert starts_like_a_call('[TOOL_CALLS][{"name": "re') and starts_like_a_call('[{"name"')


def test_llama_and_mistral_shapes_are_held_to_the_same_rules():
    for text in (
        f"[TOOL_CALLS][{READ_CALL}] and then prose",  # prose after the calls
        "[]",  # no call
        f'[TOOL_CALLS][{READ_CALL}, "x"]',  # something else in the list
        '{"name": "read_file", "parameters": {"path": "f.txt"}, "extra": 1}',
        '{"type": "tool", "name": "read_file", "parameters": {"path": "f.txt"}}',
        '{"name": "rm_rf", "parameters": {"path": "f.txt"}}',  # not a tool
    ):
        assert recover_tool_calls(text, accepts) is None, text
    # Inside prose only a read is taken out (the first wrapper), never a command.
    found = recover_calls_in_prose(f"Let me look.\n<|python_tag|>{LLAMA_READ}", reads)
    assert found is not None and found.before == "Let me look."
    assert recover_calls_in_prose(f"Run this:\n[TOOL_CALLS][{LLAMA_BASH}]", reads) is None
