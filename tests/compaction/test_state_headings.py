"""A small model's state answer is read however it writes the five section headings (a 1.5B
model's ``## Goal: fix it`` was refused as "none of its sections")."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.compaction.extractive import STATE_SECTIONS
from dsh.compaction.recallable.state_check import check_state, section_heading

INLINE = """## Goal: Evict the least recently used entry
## Decisions: evict by oldest access time
## Current state: store/lru.py fixed
## Constraints: none
## Next steps: rename max_entries"""
SOURCE = "Evict the least recently used entry; evict by oldest access time; store/lru.py fixed"


def test_a_heading_with_its_text_on_the_same_line_is_a_section():
    """Refused as "none of its sections" before: the heading was read as ``goal: evict …``."""
    state = check_state(INLINE, source=SOURCE + " max_entries", previous=None)
    assert state.splitlines()[:4] == [
        "## Goal",
        "Evict the least recently used entry",
        "## Decisions",
        "evict by oldest access time",
    ]
    assert state.count("## ") == len(STATE_SECTIONS)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("**Goal:**", ("Goal", "")),
        ("**Next step**: run the suite", ("Next steps", "run the suite")),
        ("Constraints:", ("Constraints", "")),
        ("### Current State", ("Current state", "")),
        ("Decisions", ("Decisions", "")),
        ("goal: fix it", ("Goal", "fix it")),
    ],
)
def test_headings_models_write_are_read(line, expected):
    assert section_heading(line) == expected


@pytest.mark.parametrize(
    "line", ["Constraints are tight", "- Goal: x", "Goals: x", "The goal: x", "Next"]
)
def test_a_line_that_only_starts_with_a_section_word_is_text(line):
    assert section_heading(line) is None


def test_bold_headings_become_markdown_sections():
    text = "**Goal:**\n- fix parse_date\n**Next steps:**\n- add --json"
    state = check_state(text, source="fix parse_date add --json", previous=None)
    assert "## Goal\n- fix parse_date" in state
    assert "## Next steps\n- add --json" in state


_HEADINGS = st.sampled_from(["## {}", "## {}:", "**{}:**", "{}:", "### {}", "__{}__"]).flatmap(
    lambda form: st.sampled_from(STATE_SECTIONS).map(form.format)
)
_WORDS = st.text("abcdefgh ", min_size=1, max_size=20).filter(str.strip)


@given(st.lists(st.tuples(_HEADINGS, st.lists(_WORDS, max_size=3)), min_size=1, max_size=7))
def test_reading_a_checked_state_again_changes_nothing(sections):
    """A committed state is the next pass's previous state: normalising must be a fixed point."""
    text = "\n".join(line for heading, body in sections for line in (heading, *body))
    once = check_state(text, source=text, previous=None)
    assert check_state(once, source=once, previous=None) == once
