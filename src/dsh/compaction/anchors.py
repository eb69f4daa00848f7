"""Literal anchors: the exact strings a later ``history_search`` can find again.

An anchor is a rare literal copied verbatim from the conversation — an error string, a path, an
identifier, a value with a unit, a ``key=value`` setting or a short quoted string. Stubs list the
slice's rarest anchors on one keyword line, grouped by kind (docs/compaction.md, "Layout"); code
extracts them so the line is guaranteed even when a model writes the rest of the stub.

Everything here is a pure, deterministic function of its arguments; regexes are compiled once.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from dsh.compaction.anchor_patterns import BLOCKED_BY, EXTRACTION_ORDER, NEEDLES, PATTERNS
from dsh.tools.secrets import MASK

KINDS = ("error", "path", "id", "value", "config", "quoted")
"""Anchor kinds, in the order a keyword line shows them."""

KEYWORD_PREFIX = "Keywords — "
"""How every keyword line begins (U+2014 em dash)."""

MAX_ERROR_CHARS = 120
"""Error anchors longer than this keep their first characters (still a literal substring)."""

_COMMON = """a an and are as at be but by do done error false file for from if in is it name no
none not null of ok on or path text that the this to true type value values was were with yes
command content default result output input message"""
COMMON_WORDS = frozenset(_COMMON.split())

MAX_CANDIDATES = 1000
"""At most this many anchors of one slice are counted against the corpus (bounds the time)."""
"""Anchors whose whole text is one of these (case-insensitively) are dropped."""


@dataclass(frozen=True, slots=True)
class Anchor:
    """One literal: its kind (one of ``KINDS``, or a model-made kind) and its exact text."""

    kind: str
    text: str


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_NOT_CONFIG_KEYS = frozenset({"error", "warning", "note", "hint", "info", "debug", "todo", "fatal"})
_DIFF_HEADER = re.compile(r"(?:^|\s)(?:---|\+\+\+|diff --git) ", re.MULTILINE)
"""A diff header before a path on its line: at the line's start or after a label or a line
number (a rendered tool result begins ``Tool result: diff --git a/…``)."""
_MASK_HEAD, _MASK_TAIL = MASK.split("{name}")
_MASKED = re.compile(re.escape(_MASK_HEAD) + r"[^\[\]\n]+" + re.escape(_MASK_TAIL))
"""A masked secret's placeholder (``[masked AUDIT_API_TOKEN]``): dsh wrote it, nobody said it,
so no anchor of any kind is taken from it."""
_DSH_CODE = re.compile(
    r"^[ \t]*(?:(?:User|Tool result(?: \(error\))?):[ \t]*)?\[[A-Z][A-Z0-9_]+\](?= )", re.MULTILINE
)
"""The code dsh's own notes and the results of calls it did not run begin with (``[NOT_RUN]
your reply was cut…``, ``[TOO_MANY_CALLS] not run: …``): dsh wrote it, nobody said it, so no
anchor is taken from it (a stub's keywords listed ``id: NOT_RUN``)."""
_SED_SUBSTITUTION = re.compile(r"(?<![\w/.~-])s/(?:[^/\\\n]|\\.)*/(?:[^/\\\n]|\\.)*/[A-Za-z0-9]*")
"""A sed substitution ``s/regex/replacement/flags``: code, whose slashes delimit a regex and
its replacement — ``/line-3-entry`` out of ``s/^/line-3-entry /`` is no path."""
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("<", ">"))
_QUOTES = "\"'`"


# ---- extraction -----------------------------------------------------------------------------


def extract_anchors(
    text: str, *, kinds: Collection[str] = KINDS, prefilter: bool = True
) -> list[Anchor]:
    """The literal anchors of ``text``, in first-occurrence order, each text at most once.

    Every anchor's text occurs verbatim in ``text``. ``kinds`` restricts the result, and the
    work, to those kinds (and the kinds whose matches block theirs). ``prefilter``: skip a
    pattern whose needles (``anchor_patterns.NEEDLES``) are all absent — the same result, less
    work; off only to check that.
    """
    needed = set(kinds)
    for kind in reversed(EXTRACTION_ORDER):  # blockers always come earlier in this order
        if kind in needed:
            needed.update(BLOCKED_BY[kind])
    # One byte per character and kind: 1 where a match of that kind was taken (linear time).
    taken = {kind: bytearray(len(text)) for kind in KINDS}
    masked = bytearray(len(text))  # 1 inside a secret's placeholder or dsh's code: no kind's
    if _MASK_HEAD in text:
        for match in _MASKED.finditer(text):
            masked[match.start() : match.end()] = b"\x01" * (match.end() - match.start())
    if "[" in text:
        for match in _DSH_CODE.finditer(text):
            masked[match.start() : match.end()] = b"\x01" * (match.end() - match.start())
    found: list[tuple[int, int, str]] = []  # (start, kind index, anchor text)
    lowered = text.lower() if prefilter else ""
    for kind in (k for k in EXTRACTION_ORDER if k in needed):
        blockers = [masked, taken[kind]] + [taken[other] for other in BLOCKED_BY[kind]]
        for pattern, needles in zip(PATTERNS[kind], NEEDLES[kind], strict=True):
            if prefilter and needles is not None and needles.absent(text, lowered):
                continue  # no match can exist: skip the scan
            for match in pattern.finditer(text):
                start, end = match.span()
                if any(mask.find(1, start, end) != -1 for mask in blockers):
                    continue
                anchor_text = _anchor_text(kind, match, text)
                if anchor_text is None:
                    continue
                taken[kind][start:end] = b"\x01" * (end - start)
                found.append((start, KINDS.index(kind), anchor_text))
    found.sort()
    # A text found as several kinds keeps the kind that comes first in KINDS.
    best_kind: dict[str, int] = {}
    for _, kind_index, anchor_text in found:
        best_kind[anchor_text] = min(kind_index, best_kind.get(anchor_text, kind_index))
    anchors: list[Anchor] = []
    seen: set[str] = set()
    for _, _, anchor_text in found:
        if anchor_text not in seen:
            seen.add(anchor_text)
            anchors.append(Anchor(KINDS[best_kind[anchor_text]], anchor_text))
    return [anchor for anchor in anchors if anchor.kind in kinds]


def _anchor_text(kind: str, match: re.Match[str], text: str) -> str | None:
    """The trimmed text of one match, or None when the match is not a useful anchor."""
    group = "t" if "t" in match.re.groupindex else 0
    result = trim(match.group(group))
    if kind == "error":
        # An error message ends with its sentence: prose that follows is not part of it.
        result = trim(_SENTENCE_END.split(result, maxsplit=1)[0][:MAX_ERROR_CHARS])
    elif kind == "config":
        if "key" in match.re.groupindex and match.group("key") in _NOT_CONFIG_KEYS:
            return None
        if _is_code_not_setting(result, text, match.start(group)):
            return None
    elif kind == "path":
        result = _path_text(result, text, match.start())
    elif "word" in match.re.groupindex and not _is_identifier(result):
        return None
    if not result or result.lower() in COMMON_WORDS:
        return None
    return result


def _is_code_not_setting(literal: str, text: str, start: int) -> bool:
    """``limit=limit`` (an argument passed on under its own name) and ``int = 10`` out of
    ``limit: int = 10`` (an annotated default: the key is a type) are code, not settings."""
    parts = split_config(literal)
    if parts is None:
        return False
    key, value = parts
    if key == value:
        return True
    return key in _TYPE_NAMES and _ANNOTATED.search(text, max(0, start - 40), start) is not None


_ANNOTATED = re.compile(r"\w:[ \t]*$")
_TYPE_NAMES = frozenset({"int", "str", "float", "bool", "bytes", "list", "dict", "tuple", "set"})


def _path_text(path: str, text: str, start: int) -> str:
    """Drop git's ``a/``/``b/`` on diff headers (the header may follow a label or a line
    number on its line); refuse ``8080/tcp``, ``1/2``, ``and/or`` and any piece of a sed
    substitution (``s/^/line-3-entry /``: its slashes delimit a regex, not directories)."""
    segments = path.split("/")
    if segments[0].isdigit():
        return ""
    if len(segments) == 2 and all(segment.isalpha() for segment in segments):
        return ""  # prose like "and/or" or "client/server"
    line_start = text.rfind("\n", 0, start) + 1
    if "s/" in text[line_start : start + len(path)]:
        line_end = text.find("\n", start)
        for expression in _SED_SUBSTITUTION.finditer(
            text, line_start, len(text) if line_end < 0 else line_end
        ):
            if expression.start() < start + len(path) and start < expression.end():
                return ""
    if path[:2] in ("a/", "b/") and _DIFF_HEADER.search(text, line_start, start):
        return path[2:]
    return path


def _is_identifier(token: str) -> bool:
    """Identifiers worth anchoring: mixed letters and digits, snake_case, or DASH-123 forms."""
    has_digit = any(c.isdigit() for c in token)
    has_letter = any(c.isalpha() for c in token)
    if not has_letter:
        return False
    if has_digit:
        return len(token) >= 4 or "." in token
    return "_" in token.strip("_") and len(token) >= 4


def trim(text: str) -> str:
    """Strip whitespace, trailing sentence punctuation and unbalanced brackets or quotes."""
    previous = None
    while text != previous:
        previous = text
        text = text.strip().rstrip(".,;:!?")
        for open_char, close_char in _PAIRS:
            if text.startswith(open_char) and text.count(open_char) > text.count(close_char):
                text = text[1:]
            if text.endswith(close_char) and text.count(close_char) > text.count(open_char):
                text = text[:-1]
        for quote in _QUOTES:
            if text.count(quote) % 2 == 1:
                if text.startswith(quote):
                    text = text[1:]
                elif text.endswith(quote):
                    text = text[:-1]
    return text


# ---- rarity ---------------------------------------------------------------------------------


def rarest_anchors(
    slice_text: str,
    corpus_texts: Sequence[str] = (),
    *,
    limit: int = 12,
    counts: Callable[[str], int] | None = None,
) -> list[Anchor]:
    """The slice's anchors, rarest first, at most ``limit``.

    Rarity is ``counts(text)`` when given (an ``AnchorIndex`` of the session: O(the slice)),
    else the number of occurrences of the anchor's text across ``corpus_texts`` (the whole
    session; the slice alone when empty). Ties go by kind order, then by first occurrence in the
    slice, so the result depends on the corpus only through those counts. A slice with more than
    ``MAX_CANDIDATES`` anchors competes with the first and last ``MAX_CANDIDATES // 2``.
    """
    if counts is None:
        # NUL never occurs in an anchor, so no count straddles two corpus texts.
        counts = "\0".join(corpus_texts or (slice_text,)).count
    candidates = extract_anchors(slice_text)
    if len(candidates) > MAX_CANDIDATES:  # a huge slice: its head and its tail
        half = MAX_CANDIDATES // 2
        candidates = candidates[:half] + candidates[-half:]
    ranked = []
    for position, anchor in enumerate(candidates):
        count = counts(anchor.text)
        ranked.append((count, _kind_rank(anchor.kind), position, anchor))
    ranked.sort(key=lambda item: item[:3])
    return [item[3] for item in ranked[:limit]]


class AnchorIndex:
    """How many texts of a session mention each anchor, kept incrementally: each text is
    scanned once, when it is added, so a later lookup costs O(1) however long the log is.

    ``count(text)`` is the number of added texts in which ``text`` was extracted as an anchor;
    like the substring count it ranks a literal that recurs across the session above one seen
    once, and it does not depend on the order the texts were added in. ``counts`` and ``texts``
    are the whole state: an index made from them (a stored one) ranks as the one they came from.
    """

    def __init__(self, counts: Counter[str] | None = None, texts: int = 0) -> None:
        self._counts: Counter[str] = Counter() if counts is None else counts
        self.texts = texts

    def add(self, text: str) -> set[str]:
        """Count ``text``; the anchor texts it was counted for (each once)."""
        found = {anchor.text for anchor in extract_anchors(text)}
        self._counts.update(found)
        self.texts += 1
        return found

    def count(self, text: str) -> int:
        return self._counts[text]

    @property
    def counts(self) -> Mapping[str, int]:
        """How many added texts name each anchor text (only texts named at least once)."""
        return self._counts


def _kind_rank(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else len(KINDS)


# ---- keyword lines --------------------------------------------------------------------------


def keyword_line(anchors: Sequence[Anchor], *, max_chars: int = 400) -> str:
    """One line listing ``anchors`` grouped by kind, e.g.
    ``Keywords — error: "ValueError: bad port"; path: src/app.py, conf/x.toml; id: ZEBRA-7731``.

    Anchors are taken in the given order (most important first) while the line fits
    ``max_chars``; one that does not fit is skipped whole. Empty string when nothing fits.
    """
    return _render_within(_dedupe(anchors), [], max_chars)


def merge_keyword_lines(
    model_line: str, required: Sequence[Anchor], *, source: str | None = None, max_chars: int = 400
) -> str:
    """The model's keyword line merged with code-extracted ``required`` anchors.

    Every required anchor appears (first within its kind), even past ``max_chars``; the model's
    other anchors follow as far as ``max_chars`` allows — when ``source`` is given, only those
    that occur in it verbatim (a literal the model invented or copied from an instruction never
    reaches a frozen stub).
    """
    must = _dedupe(required)
    must_texts = {anchor.text for anchor in must}
    listed = parse_keyword_line(model_line)
    if source is not None:
        listed = [anchor for anchor in listed if occurs_in(anchor.text, source)]
    optional = [a for a in _dedupe(listed) if a.text not in must_texts]
    return _render_within(optional, must, max_chars)


def occurs_in(literal: str, source: str) -> bool:
    """True when ``literal`` occurs verbatim in ``source``; a literal clipped with ``…`` counts
    when each of its parts does (a clipped line keeps a prefix of the original)."""
    parts = [part for part in literal.split("…") if part]
    return bool(parts) and all(part in source for part in parts)


_NUMBER = re.compile(r"(?<!\w)\d(?:[\d.,:/-]*\d)?")
"""A number as text writes it: a count, a date, a version, a time, an amount's digits."""


def numbers_of(text: str) -> list[str]:
    """The numbers of two digits or more ``text`` names (``777``, ``2031-07-04``, ``4411`` of
    ``#4411``, ``1200`` of ``$1200``); a lone digit is too common to check."""
    return [n for n in _NUMBER.findall(text) if sum(c.isdigit() for c in n) >= 2]


def literals_said_in(line: str, source: str) -> bool:
    """True when every literal ``line`` names — each anchor (``extract_anchors``) and each
    number of two digits or more (``numbers_of``: "777 tests passed", "deadline 2031-07-04",
    "PR #4411", none of them an anchor) — occurs in ``source``: a model's line naming what the
    conversation never said never reaches a checkpoint."""
    if not all(occurs_in(anchor.text, source) for anchor in extract_anchors(line)):
        return False
    return all(number in source for number in numbers_of(line))


def parse_keyword_line(line: str) -> list[Anchor]:
    """The anchors of a keyword line, in the line's order; the inverse of ``keyword_line``.

    Tolerant of model-written lines: the prefix may be missing or spelled ``Keywords:``, and
    items without a ``kind:`` label get the kind ``other``.
    """
    body = line.strip()
    for prefix in (KEYWORD_PREFIX.strip(), "Keywords:", "Keywords -", "Keywords"):
        if body.startswith(prefix):
            body = body[len(prefix) :]
            break
    anchors: list[Anchor] = []
    for group in _split_outside_quotes(body, ";"):
        kind, items = _split_kind(group)
        for item in _split_outside_quotes(items, ","):
            text = _unquote(item.strip())
            if text:
                anchors.append(Anchor(kind, text))
    return anchors


def split_config(text: str) -> tuple[str, str] | None:
    """``(key, value)`` of a config anchor (``retries = 5``, ``PORT=80``, ``"port": 1``)."""
    match = _CONFIG_PARTS.match(text)
    if match is None:
        return None
    value = match.group("value").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return match.group("key"), value


_CONFIG_PARTS = re.compile(r"""^"?(?P<key>[A-Za-z_][\w.-]*)"?[ \t]*[=:][ \t]*(?P<value>.*)$""")
_KIND_LABEL = re.compile(r"^\s*([a-z][a-z _-]*):\s")


def _dedupe(anchors: Iterable[Anchor]) -> list[Anchor]:
    seen: set[str] = set()
    result = []
    for anchor in anchors:
        if anchor.text and anchor.text not in seen:
            seen.add(anchor.text)
            result.append(anchor)
    return result


def _render_within(candidates: Sequence[Anchor], must: Sequence[Anchor], max_chars: int) -> str:
    chosen = list(must)
    for anchor in candidates:
        if len(_render([*chosen, anchor])) <= max_chars:
            chosen.append(anchor)
    return _render(chosen)


def _render(anchors: Sequence[Anchor]) -> str:
    if not anchors:
        return ""
    groups: dict[str, list[str]] = {}
    for anchor in sorted(anchors, key=lambda a: _kind_rank(a.kind)):  # stable within a kind
        groups.setdefault(anchor.kind, []).append(_quote(anchor))
    rendered = [f"{kind}: {', '.join(items)}" for kind, items in groups.items()]
    return KEYWORD_PREFIX + "; ".join(rendered)


def _quote(anchor: Anchor) -> str:
    text = anchor.text
    needs_quotes = any(c in text for c in ',;"\\\n') or text != text.strip()
    if anchor.kind in ("error", "quoted") or needs_quotes:
        return json.dumps(text, ensure_ascii=False)
    return text


def _unquote(item: str) -> str:
    if len(item) >= 2 and item.startswith('"') and item.endswith('"'):
        try:
            value = json.loads(item)
        except json.JSONDecodeError:
            return item[1:-1]
        return value if isinstance(value, str) else item
    return item


def _split_kind(group: str) -> tuple[str, str]:
    match = _KIND_LABEL.match(group)
    if match is None:
        return "other", group
    return match.group(1).strip(), group[match.end() :]


def _split_outside_quotes(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    in_quotes = False
    escaped = False
    for char in text:
        if in_quotes and escaped:
            escaped = False
        elif in_quotes and char == "\\":
            escaped = True
        elif char == '"':
            in_quotes = not in_quotes
        elif char == separator and not in_quotes:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]
