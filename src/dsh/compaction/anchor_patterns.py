"""The literal-anchor patterns of ``dsh.compaction.anchors``, and what each needs to match.

Each kind has a list of patterns tried in order. A pattern's named group ``t`` (when present)
is the anchor text; otherwise the whole match is. A ``word`` match must look like an
identifier (``anchors._is_identifier``).

``NEEDLES`` lists, per pattern, literal substrings of which any match must contain one (None:
no such substring). A text without any of them cannot match, so the pattern's scan is skipped:
most conversation messages lack most of them, and the scans are the extraction's cost. The
result is the same with or without the skip (a property test holds the two equal). Needles of
case-insensitive patterns are looked up in the lower-cased text, and avoid the letters whose
case folding differs between ``str.lower`` and the regex engine (``i``, ``s``, Greek).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Needles:
    """Substrings of which every match contains at least one (``lowered``: in the lower-cased
    text, for a case-insensitive pattern)."""

    any_of: tuple[str, ...]
    lowered: bool = False

    def absent(self, text: str, lowered: str) -> bool:
        haystack = lowered if self.lowered else text
        return not any(needle in haystack for needle in self.any_of)


_EXC_NAME = r"(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Fault)"
_RENDER_PREFIX = r"(?:(?:User|Assistant|System|Tool result(?: \(error\))?):[ \t]*)?"
_LINE_START = r"^[ \t]*" + _RENDER_PREFIX + r"[+-]?[ \t]*"
_UNITS = (
    r"KiB|MiB|GiB|TiB|KB|MB|GB|TB|kB|bytes|ms|µs|us|ns|secs|sec|seconds|minutes|mins|min"
    r"|hours|hrs|days|kHz|MHz|GHz|Hz|tokens|rps|qps|cores"
)
_SCALAR = (
    r"""(?:"[^"\n]*"|'[^'\n]*'|\d+(?:\.\d+)?[ \t](?:""" + _UNITS + r""")\b|[^\s"'#(){}\[\],;=]+)"""
)

PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "error": (
        re.compile(r"\b(?:FAILED|ERROR)[ \t]+\S+::\S+"),
        re.compile(
            r"(?<![\w.])" + _EXC_NAME + r"(?::[ \t]*\S[^\n]*"
            r"""|\([ \t]*(?:"[^"\n]*"|'[^'\n]*')[ \t]*\)|[ \t]*$)""",
            re.M,
        ),
        re.compile(r"(?<![\w-])(?:error|fatal|panic)(?:\[[\w-]+\])?:[ \t]*\S[^\n]*", re.I),
        re.compile(r"^E[ \t]{2,}(?P<t>\S[^\n]*)", re.M),
        re.compile(r"(?:^|(?<=: ))[A-Z]{1,4}\d{3,4}[ \t]+\S[^\n]*", re.M),
        re.compile(
            r"^" + _RENDER_PREFIX + r"(?P<t>[^\n]*?(?:No such file or directory|command not found"
            r"|Permission denied|Connection refused|Segmentation fault)[^\n]*)",
            re.M,
        ),
        re.compile(r"\bexit(?:ed with)? (?:code|status) \d+", re.I),
    ),
    "config": (
        re.compile(
            _LINE_START + r"(?:export[ \t]+)?(?P<t>[A-Za-z_][\w.-]*[ \t]*=[ \t]*" + _SCALAR + r")"
            r"[ \t]*(?:#[^\n]*)?$",
            re.M,
        ),
        re.compile(
            _LINE_START + r"(?P<t>(?P<key>[a-z_][\w.-]*):[ \t]+" + _SCALAR + r")"
            r"[ \t]*(?:#[^\n]*)?$",
            re.M,
        ),
        re.compile(
            _LINE_START + r"""(?P<t>"[\w.-]+":[ \t]*(?:"[^"\n]*"|[^\s"{}\[\],]+)),?[ \t]*$""",
            re.M,
        ),
        re.compile(r"(?<![\w.?&$-])(?P<t>[A-Za-z_][\w.-]*=" + _SCALAR + r")"),
        re.compile(
            r"(?<![\w.])(?P<t>[A-Za-z_][\w.-]*[ \t]=[ \t]"
            r"""(?:"[^"\n]*"|'[^'\n]*'|true|false|\d+(?:\.\d+)?(?:[ \t]?(?:"""
            + _UNITS
            + r""")|[A-Za-z%]{1,3})?))(?![\w(])(?!\.\w)"""
        ),
    ),
    "path": (
        re.compile(r"\bhttps?://[^\s\"'<>`)\]]+"),
        re.compile(
            r"(?<![\w/.~:@+<-])"
            r"(?:(?:~|\.{1,2})?/(?:[\w.@+-]+/)*|(?:[\w.@+-]+/)+)[\w.@+-]*\w(?::\d+){0,2}"
        ),
        re.compile(
            r"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:py|pyi|toml|yaml|yml|json|jsonl|md|txt|cfg|ini"
            r"|conf|lock|log|env|js|ts|tsx|jsx|rs|go|c|h|cpp|hpp|java|kt|rb|sh|sql|html|css|xml"
            r"|csv|ipynb)(?::\d+){0,2}\b"
        ),
    ),
    "id": (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        # a ticket-like id with any hyphenated tail: QX-7731-LAMBDA whole, never cut to QX-7731
        re.compile(r"(?<![\w-])[A-Z][A-Z0-9]+-\d+(?:-[A-Za-z0-9]+)*(?!-?\w)"),
        re.compile(r"(?<![\w.])v\d+(?:\.\d+)+(?:[-+][\w.]+)?(?![.\d])"),
        re.compile(r"(?<![\w.])\d+\.\d+\.\d+(?:[-+][\w.]+)?(?![.\d])"),
        re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b"),
        re.compile(r"(?<![\w-])(?=[\w-]*[\d_])(?P<word>[A-Za-z_][\w-]*\w)(?![\w-])"),
    ),
    "value": (
        re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?\b"),
        re.compile(r"(?:\blocalhost|\b[a-z][\w-]*(?:\.[a-z][\w-]*)+):(?P<t>\d{2,5})\b(?![.:]\d)"),
        re.compile(r"(?:(?<=[\s\"'(=])|^):(?P<t>\d{2,5})\b(?![.:]\d)", re.M),
        re.compile(r"\b\d{2,5}/(?:tcp|udp)\b"),
        re.compile(r"(?:\b[Pp]ort|-p|--publish)[ \t]+(?P<t>\d{2,5}(?::\d{2,5})?)\b"),
        re.compile(r"(?<![\w.])\d+(?:\.\d+)?%"),
        re.compile(
            r"(?<![\w.])\d+(?:\.\d+)?(?:[ \t]?(?:" + _UNITS + r")|(?:B|s|m|h|d|k|K|M|G|x|px))\b"
        ),
    ),
    "quoted": (
        re.compile(r"""(?<![\w\\])"(?P<t>[^"\s](?:[^"\n]{1,58})[^"\s])"(?!\w)(?![ \t]*:)"""),
        re.compile(r"""(?<![\w\\])'(?P<t>[^'\s](?:[^'\n]{1,58})[^'\s])'(?!\w)(?![ \t]*:)"""),
        re.compile(r"(?<![\w\\])`(?P<t>[^`\s](?:[^`\n]{1,58})[^`\s])`"),
    ),
}

BLOCKED_BY: dict[str, tuple[str, ...]] = {
    "error": (),
    "config": (),
    "path": (),
    "id": ("config", "path"),
    "value": ("config", "path", "id"),
    "quoted": ("error", "config"),
}
"""A match of a kind is dropped when it overlaps a match of one of these kinds."""

EXTRACTION_ORDER = ("error", "config", "path", "id", "value", "quoted")


def _any(*needles: str) -> Needles:
    return Needles(needles)


def _lower(*needles: str) -> Needles:
    return Needles(needles, lowered=True)


NEEDLES: dict[str, tuple[Needles | None, ...]] = {
    "error": (
        _any("::"),
        _any("Error", "Exception", "Warning", "Exit", "Interrupt", "Fault"),
        _lower("err", "fatal", "pan"),
        _any("E ", "E\t"),
        None,
        _any(
            "No such file or directory",
            "command not found",
            "Permission denied",
            "Connection refused",
            "Segmentation fault",
        ),
        _lower("ex"),
    ),
    "config": (_any("="), _any(":"), _any('":'), _any("="), _any("=")),
    "path": (_any("://"), _any("/"), _any(".")),
    "id": (_any("-"), _any("-"), _any("."), _any("."), None, None),
    "value": (
        _any("."),
        _any(":"),
        _any(":"),
        _any("/tcp", "/udp"),
        _any("ort", "-p"),
        _any("%"),
        None,
    ),
    "quoted": (_any('"'), _any("'"), _any("`")),
}
assert all(len(NEEDLES[kind]) == len(PATTERNS[kind]) for kind in PATTERNS)
