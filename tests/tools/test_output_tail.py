"""What a running ``bash`` command prints reaches its ``OutputTail`` as it comes, as a terminal
would show it, masked, bounded (``dsh.tools.output_tail``). The command is real and gated by a
file the test writes: the test waits for what it expects, no timer decides."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.output_tail import KEEP_CHARS, LINE_CHARS, SHOWN_LINES, OutputTail
from dsh.tools.secrets import SecretPolicy
from dsh.tools.shell import BashTool

SECRET = "tail-secret-0123456789"
POLICY = SecretPolicy(values=(("MY_API_KEY", SECRET),))
GATED = (
    "echo first; printf '\\033[1;31mred\\033[0m \\033]0;title\\007done\\n'; "
    f"echo key {SECRET} end; printf 'bar 10%%\\rbar 50%%'; "
    "while [ ! -f go ]; do sleep 0.05; done; echo; echo went"
)
"""Prints, then waits (its line in progress a redrawn bar) until the test writes ``go``."""


async def until_shown(tail: OutputTail, changed: asyncio.Event, lines: tuple[str, ...]) -> None:
    async def wait() -> None:
        while tail.lines() != lines:
            await changed.wait()
            changed.clear()

    await asyncio.wait_for(wait(), 60)  # a guard against a hang only


def test_the_tail_follows_a_running_command_as_a_terminal_shows_it_masked(tmp_path: Path):
    changed = asyncio.Event()
    tail = OutputTail(POLICY, changed.set)
    ctx = ToolContext(workspace=tmp_path, session_id="s", call_id="c", output_tail=tail)

    async def scenario() -> ToolOutput:
        call = asyncio.create_task(BashTool(POLICY).run({"command": GATED}, ctx))
        printed = ("first", "red done", "key [masked MY_API_KEY] end", "bar 50%")
        await until_shown(tail, changed, printed)
        assert not call.done()  # shown while the command still runs
        (tmp_path / "go").write_text("")
        output = await asyncio.wait_for(call, 60)
        assert tail.lines() == (*printed, "went")
        return output

    output = asyncio.run(scenario())
    assert output.text.endswith("bar 50%\nwent\n")  # the result is what it was


def test_a_secret_arriving_in_pieces_never_shows_a_part():
    tail = OutputTail(POLICY)
    tail.feed("", f"token {SECRET[:9]}")
    assert tail.lines() == ("token ",)  # its start may be the key's: it waits
    tail.feed("", f"token {SECRET} ok")
    assert tail.lines() == ("token [masked MY_API_KEY] ok",)


def test_what_the_bound_left_of_a_secret_is_not_shown():
    """A line longer than the reader's ``max_line`` is given out in pieces: a key can be split
    between two reads, and the bound can drop the first."""
    tail = OutputTail(POLICY)
    tail.feed("a" * 10 + SECRET[:12], "")
    tail.feed(SECRET[12:] + "\n" + "w" * KEEP_CHARS + "\n", "")  # the first read goes
    shown = tail.lines()
    assert shown == ("w" * LINE_CHARS,)  # not the key's rest


def test_the_tail_is_bounded_and_shows_the_last_lines_with_controls_escaped():
    tail = OutputTail(POLICY)
    for i in range(20_000):
        tail.feed(f"line {i} " + "x" * 40 + "\n", "")
    tail.feed("bell\x07\ttab\n", "")
    assert sum(map(len, tail._done)) <= KEEP_CHARS + 100  # the last reads that hold its end
    shown = tail.lines()
    assert len(shown) == SHOWN_LINES
    assert shown[-2].startswith("line 19999 ") and shown[-1] == "bell\\x07\ttab"


def test_nothing_printed_shows_nothing():
    tail = OutputTail(POLICY)
    assert tail.version == 0 and tail.lines() == ()
    tail.feed("", "")
    assert tail.version == 0 and tail.lines() == ()
