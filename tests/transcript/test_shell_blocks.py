"""``!cmd`` output sent ahead of a prompt: its blocks, and a session titled by what was typed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dsh.store import MemoryStore
from dsh.transcript.listing import session_summaries
from dsh.transcript.shell_blocks import shell_block, typed_part
from dsh.transcript.titles import session_title
from tests.helpers import append_chat_turn, new_session

commands = st.text(st.characters(blacklist_characters="\n"), min_size=1, max_size=40)
outputs = st.text(max_size=200)  # backticks, fences, blank lines, anything a command prints
typed = st.text(min_size=1, max_size=80).filter(lambda t: t.strip())


@given(st.lists(st.tuples(commands, outputs, st.booleans()), min_size=1, max_size=4), typed)
def test_the_typed_part_of_a_prompt_is_what_follows_its_command_blocks(blocks, text):
    prompt = "\n\n".join([*(shell_block(c, o, failed=f) for c, o, f in blocks), text])
    assert typed_part(prompt) == text


@given(outputs, st.booleans())
def test_a_prompt_of_blocks_alone_is_kept_whole(output, failed):
    block = shell_block("ls", output, failed=failed)
    assert typed_part(block) == block


def test_text_that_only_looks_like_a_block_later_on_is_kept():
    prompt = "see below\n\nI ran `ls` in the workspace; it printed:\n```\na\n```"
    assert typed_part(prompt) == prompt


def test_a_session_is_titled_by_what_was_typed_not_the_command_output_before_it():
    store = MemoryStore()
    session = new_session(store)
    status = shell_block("git status --short", " M calc.py\n", failed=False)
    append_chat_turn(session, f"{status}\n\nfix the failing test", "done")
    assert session_title(session.events) == "fix the failing test"
    (summary,) = session_summaries(store, None)  # the listing's fold says the same
    assert summary.title == "fix the failing test"
