"""Skipping a pattern whose needles are absent changes no anchor (``anchor_patterns.NEEDLES``).

Each needle must occur in every match of its pattern; if one did not, some text would match
the pattern without containing it, and extraction with the skip would miss an anchor. The texts
here are built from fragments that come near every pattern (errors, paths, settings, ids, ports,
quotes), in every case and with the characters whose case folding differs between ``str.lower``
and the regex engine (``İ``, ``ı``, ``ſ``, the Kelvin sign).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction.anchor_patterns import NEEDLES, PATTERNS
from dsh.compaction.anchors import KINDS, extract_anchors

FRAGMENTS = [
    "ValueError: bad port",
    "KeyboardInterrupt",
    "mod.PageFault: at 0x0",
    "SystemExit: 2",
    "DeprecationWarning: old",
    "BaseException('x')",
    "FAILED tests/test_x.py::test_y",
    "error[E0425]: cannot find",
    "FATAL: disk full",
    "PANIC: at the disco",
    "pANıC: folded",
    "exİt code 3",
    "exıt status 2",
    "EXIT CODE 4",
    "exited with code 1",
    "E   assert 1 == 2",
    "bash: foo: command not found",
    "E1234 something broke",
    "https://example.com/a?b=c",
    "src/app.py:12",
    "./run.sh",
    "conf/x.toml",
    "port = 8080",
    "retries=5",
    '"timeout": 30',
    "log_level: debug",
    "ZEBRA-7731",
    "v1.2.3-rc1",
    "2.0.11",
    "deadbeef42",
    "value_3_1",
    "10.0.0.1:8080",
    "localhost:5432",
    ":9000",
    "8080/tcp",
    "Port 22",
    "-p 8080:80",
    "--publish 443",
    "95%",
    "250 ms",
    "3 KiB",
    "'quoted text here'",
    '"double quoted text"',
    "`code span here`",
    "ſtatus = ok",
    "\u212aey: value",
    "Tool result: ",
    "User: ",
    "Assistant: ",
]
SEPARATORS = [" ", "\n", "\t", ", ", "; ", "(", ")", "=", ":", "-", "/", ".", "'", '"', "`"]


def _texts():
    parts = st.one_of(
        st.sampled_from(FRAGMENTS),
        st.sampled_from(FRAGMENTS).map(str.upper),
        st.sampled_from(FRAGMENTS).map(str.lower),
        st.sampled_from(SEPARATORS),
        st.text(alphabet="aeiknprstxAEIKNPRSTX0123456789:=-/.%\"'` \nİıſ\u212a", max_size=12),
    )
    return st.lists(parts, max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(_texts(), st.sampled_from([KINDS, ("config",), ("error",), ("value", "quoted")]))
def test_extraction_with_the_prefilter_equals_extraction_without_it(text, kinds):
    assert extract_anchors(text, kinds=kinds) == extract_anchors(text, kinds=kinds, prefilter=False)


def test_each_fragment_in_each_case_keeps_its_anchors_and_its_needles():
    for fragment in FRAGMENTS:
        for text in (fragment, fragment.upper(), fragment.lower(), f"x {fragment}\n"):
            assert extract_anchors(text) == extract_anchors(text, prefilter=False), text
            test_every_match_of_a_pattern_contains_one_of_its_needles.hypothesis.inner_test(text)


@settings(max_examples=300, deadline=None)
@given(_texts())
def test_every_match_of_a_pattern_contains_one_of_its_needles(text):
    lowered = text.lower()
    for kind, patterns in PATTERNS.items():
        for pattern, needles in zip(patterns, NEEDLES[kind], strict=True):
            if needles is None:
                continue
            for match in pattern.finditer(text):
                found = match.group(0).lower() if needles.lowered else match.group(0)
                assert any(needle in found for needle in needles.any_of), (kind, match)
                assert not needles.absent(text, lowered)


def test_a_text_lacking_every_needle_skips_those_scans_and_keeps_its_anchors():
    text = "plain words and an identifier like value_3_1 with deadbeef42"
    assert extract_anchors(text) == extract_anchors(text, prefilter=False)
    assert [a.text for a in extract_anchors(text)] == ["value_3_1", "deadbeef42"]
