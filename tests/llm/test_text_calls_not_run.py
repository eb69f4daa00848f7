"""Naming the tool calls a reply wrote in its text that are not run (``calls_not_run``): a
write, a command or an MCP call inside prose, what a small model writes before claiming the
work is done. Every call to a known tool written anywhere in the text counts, but those taken
out of it to run."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from dsh.events import Message, ModelSource, TextBlock
from dsh.llm.text_tool_calls import calls_in_text, calls_not_run, recover_reply

TOOLS = {"read_file": "read", "edit_file": "write", "bash": "shell"}


def accepts(name: str, arguments: str) -> bool:
    return name in TOOLS


def reads(name: str, arguments: str) -> bool:
    return TOOLS.get(name) == "read"


def call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


EDIT = call("edit_file", path="a.py", old="x", new="y")
READ = call("read_file", path="a.py")
BASH = call("bash", command="pytest")


def not_run(text: str) -> list[str]:
    """What the loop names for a reply of ``text``: after recovering what runs."""
    message = Message(
        id="a-1-1",
        role="assistant",
        content=(TextBlock(text=text),),
        source=ModelSource(provider="p", model="m"),
    )
    recovered = recover_reply(message, accepts, "text-1-1", in_prose=reads)
    return calls_not_run(text, accepts, recovered)


def test_a_write_in_a_tools_tag_inside_prose_is_named() -> None:
    """What Qwen2.5-Coder 1.5B wrote, then claimed the tests passed."""
    text = f"I'll fix it.\n<tools>{EDIT}</tools>\nThe tests passed and the bug is fixed."
    assert not_run(text) == ["edit_file"]


def test_fenced_and_bare_calls_inside_prose_are_named_in_order() -> None:
    text = f"First:\n```json\n{EDIT}\n```\nthen {BASH} and <tool_call>{EDIT}</tool_call> done."
    assert not_run(text) == ["edit_file", "bash", "edit_file"]


def test_a_reply_of_calls_alone_runs_them_all_and_names_none() -> None:
    assert not_run(f"{EDIT}\n{BASH}") == []
    assert not_run(f"```json\n{EDIT}\n{READ}\n```") == []


def test_a_read_taken_out_of_prose_runs_and_a_write_beside_it_is_named() -> None:
    """The first wrapper of read-only calls runs; a write before it or after it does not."""
    after = f"Let me look.\n```json\n{READ}\n```\nNow the fix:\n```json\n{EDIT}\n```\nDone."
    assert not_run(after) == ["edit_file"]
    before = f"Fix:\n```json\n{EDIT}\n```\nand check:\n```json\n{READ}\n```"
    assert not_run(before) == ["edit_file"]


def test_a_whole_reply_with_one_call_refused_names_the_good_ones() -> None:
    """One call to a tool dsh does not have leaves the whole reply text: its other calls are
    not run either."""
    text = f"{EDIT}\n{call('deploy', target='prod')}"
    assert not_run(text) == ["edit_file"]


def test_what_is_not_a_call_to_a_known_tool_is_not_named() -> None:
    text = (
        'A config: {"name": "dsh", "version": 2}. An unknown tool: '
        f"{call('deploy', target='prod')}. Broken: "
        '{"name": "edit_file", "arguments": {"path": "a.py"'
        ' and {"name": "bash", "arguments": "not an object"}'
    )
    assert not_run(text) == []
    assert calls_in_text("no calls at all", accepts) == []


@given(st.text(alphabet='{}[]":, namearguments\n`<>/toolscal_xyz0123', max_size=200))
def test_any_text_is_scanned_without_failing(text: str) -> None:
    assert all(found in TOOLS for found in not_run(text))


def test_llama_and_mistral_calls_inside_prose_are_named() -> None:
    llama = json.dumps({"name": "edit_file", "parameters": {"path": "a.py"}})
    assert not_run(f"I will edit it: <|python_tag|>{llama}") == ["edit_file"]
    assert not_run(f"Done. [TOOL_CALLS][{BASH}]") == ["bash"]
    assert not_run(f"Fixed: {llama} (it passed)") == ["edit_file"]
