"""``echo_blocks`` writes a long output a piece at a time: the same bytes as one ``click.echo``
of the joined text, colour codes stripped (or kept) alike."""

from __future__ import annotations

import click
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from dsh.cli.context import echo_blocks

_blocks = st.lists(st.text(st.sampled_from("ab …é\n\x1b[31;1m0"), max_size=8), max_size=12)


def _output(write, *, color: bool) -> bytes:
    result = CliRunner().invoke(click.command()(write), [], color=color)
    assert result.exception is None
    return result.stdout_bytes


@given(_blocks, st.integers(1, 4), st.booleans())
def test_pieces_write_what_one_echo_of_the_joined_text_writes(blocks, per_piece, color):
    whole = _output(lambda: click.echo("\n\n".join(blocks)), color=color)
    pieces = _output(lambda: echo_blocks(blocks, "\n\n", per_piece=per_piece), color=color)
    assert pieces == whole


def test_colour_codes_are_stripped_when_the_output_is_not_a_terminal():
    blocks = ["\x1b[31mred\x1b[0m", "plain", "x\x1b[1m"]
    assert _output(lambda: echo_blocks(blocks, "\n\n", per_piece=1), color=False) == (
        b"red\n\nplain\n\nx\n"
    )
    kept = _output(lambda: echo_blocks(blocks, "\n\n", per_piece=1), color=True)
    assert kept == "\n\n".join(blocks).encode() + b"\n"


def test_no_blocks_is_an_empty_line():
    assert _output(lambda: echo_blocks([], "\n\n"), color=False) == b"\n"
