"""MCP tools are offered under names every provider accepts, unique, the same every time."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from dsh.tools.mcp.names import MAX_NAME_CHARS, NAME_PATTERN, exposed_names, sanitise

names = st.text(min_size=0, max_size=80)
pairs = st.lists(st.tuples(names, names), max_size=30)


def test_a_plain_pair_keeps_its_names():
    assert exposed_names([("github", "create_issue"), ("fs", "read-file")]) == [
        "mcp__github__create_issue",
        "mcp__fs__read-file",
    ]


def test_other_characters_become_underscores():
    assert sanitise("a.b c/ü") == "a_b_c__"
    assert sanitise("") == "_"
    assert exposed_names([("docs", "search.v2")]) == ["mcp__docs__search_v2"]


def test_pairs_that_sanitise_alike_still_get_distinct_names():
    first, second = exposed_names([("s", "a.b"), ("s", "a_b")])
    assert first == "mcp__s__a_b"
    assert second != first and second.startswith("mcp__s__a_b_") and len(second) <= 64


def test_a_long_name_is_cut_with_a_hash_of_the_original():
    long_tool = "x" * 100
    (name,) = exposed_names([("server", long_tool)])
    assert len(name) == MAX_NAME_CHARS and name.startswith("mcp__server__xxx")
    (other,) = exposed_names([("server", long_tool + "y")])
    assert other != name  # the cut alone would have made them equal


@given(pairs)
@example([("a", "b"), ("a", "b")])  # the same pair twice (two servers listing alike)
@example([("s", "t" * 60), ("s", "t" * 61), ("s", "t" * 62)])
def test_names_are_valid_unique_and_deterministic(tools):
    names = exposed_names(tools)
    assert len(names) == len(tools)
    assert all(NAME_PATTERN.fullmatch(name) for name in names)
    assert all(name.startswith("mcp__") for name in names)  # never a built-in tool's name
    assert len(set(names)) == len(names)
    assert exposed_names(tools) == names
    for (server, tool), name in zip(tools, names, strict=True):
        plain = f"mcp__{sanitise(server)}__{sanitise(tool)}"
        if len(plain) <= MAX_NAME_CHARS and plain not in names[: names.index(name)]:
            assert name == plain  # the readable name whenever it fits and is free
