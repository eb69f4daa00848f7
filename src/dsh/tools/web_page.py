"""What ``web_fetch`` makes of a fetched body: which content types it reads, and their text.

HTML (``text/html``, ``application/xhtml+xml``) becomes Markdown (``markdownify`` on Beautiful
Soup's parser), without what a reader never sees (scripts, styles, ``<head>``, forms' inner
workings, inline SVG, ``data:`` images), with relative links made absolute against the page's
final URL so the model can fetch them. Other text (``text/*``), JSON and XML (``*+json``,
``*+xml``), JavaScript, YAML and TOML pass as they are, decoded by their ``charset`` (UTF-8 by
default, bad bytes replaced). Anything else (an image, a PDF, an archive,
``application/octet-stream``) is refused by name. A body without a content type is read as text
when it looks like text (no NUL byte, mostly valid UTF-8), as HTML when it begins like HTML.
"""

from __future__ import annotations

import codecs
import contextlib
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from bs4.dammit import UnicodeDammit
from markdownify import ATX, MarkdownConverter

Reading = Literal["html", "text"]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/x-ndjson",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
    }
)
"""Types outside ``text/*`` read as text (besides any ``…+json`` and ``…+xml``)."""

_HIDDEN = (
    "script",
    "style",
    "noscript",
    "template",
    "head",
    "svg",
    "canvas",
    "iframe",
    "object",
    "embed",
    "select",
    "button",
)
"""Elements whose content a reader does not see as text (a ``<head>``'s title is kept apart)."""

_HIDDEN_OPENING = re.compile(r"<(script|style|noscript|template|svg)\b")
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")


@dataclass(frozen=True, slots=True)
class ContentType:
    """A ``Content-Type`` header: its media type (lower case) and charset, if any."""

    media: str
    charset: str | None

    @classmethod
    def parse(cls, header: str | None) -> ContentType:
        """``text/html; charset=ISO-8859-1`` → ``("text/html", "iso-8859-1")``; none: ``""``."""
        if not header:
            return cls("", None)
        media, *params = header.split(";")
        charset = None
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "charset":
                charset = value.strip().strip("\"'").lower() or None
        return cls(media.strip().lower(), charset)

    def reading(self) -> Reading | None:
        """How the body is read, or None when it is not text (refused by name)."""
        media = self.media
        if media in HTML_TYPES:
            return "html"
        if media.startswith("text/") or media in TEXT_TYPES:
            return "text"
        if media.endswith(("+json", "+xml")):
            return "text"
        return None


def sniff(body: bytes) -> Reading | None:
    """How a body without a content type is read: HTML when it begins like HTML, text when it
    looks like text (no NUL byte in its first 8 KB, at most 1 in 50 characters undecodable),
    else None (binary)."""
    head = body[:8192]
    if b"\x00" in head:
        return None
    text = head.decode("utf-8", errors="replace")
    if text.count("\ufffd") * 50 > max(len(text), 1):
        return None
    start = text.lstrip().lower()
    return "html" if start.startswith(("<!doctype html", "<html")) else "text"


def decoded(body: bytes, charset: str | None) -> str:
    """``body`` decoded by ``charset`` when Python knows it, else as UTF-8; bad bytes (a cut
    in the middle of a character too) replaced."""
    encoding = "utf-8"
    if charset:
        with contextlib.suppress(LookupError):  # a charset Python does not know: UTF-8
            encoding = codecs.lookup(charset).name
    return body.decode(encoding, errors="replace")


@dataclass(frozen=True, slots=True)
class Page:
    """A body as the model reads it."""

    text: str
    title: str | None = None
    partial: bool = False
    """Only the start of the page's markup was converted (``max_markup``)."""
    markup_chars: int = 0
    """How long the page's markup is without what a reader never sees."""


def html_page(body: bytes, charset: str | None, url: str, max_markup: int | None = None) -> Page:
    """The Markdown of an HTML ``body`` fetched from ``url`` (its final URL: relative links
    are made absolute against it, or against the page's ``<base href>``). The charset is the
    header's, else the page's own ``<meta charset>``, else a guess (Beautiful Soup's).

    Converting is slow (``dsh.tools.web_fetch.MARKUP_PER_CHAR``), so the elements a reader
    never sees are cut out of the text first (:func:`without_hidden`: on most pages the bulk of
    the bytes is inline script and style), and only the first ``max_markup`` characters of what
    is left are converted, cut before a tag (``partial`` says so)."""
    if charset:
        markup = decoded(body, charset)
    else:
        markup = str(UnicodeDammit(body, is_html=True).unicode_markup or "")
    markup = without_hidden(markup)
    markup_chars = len(markup)
    partial = max_markup is not None and len(markup) > max_markup
    if max_markup is not None and partial:
        before_tag = markup.rfind("<", 0, max_markup)
        markup = markup[: before_tag if before_tag > 0 else max_markup]
    soup = BeautifulSoup(markup, "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag is not None else ""
    base = soup.find("base", href=True)
    if isinstance(base, Tag):
        url = urljoin(url, str(base["href"]))
    for tag in soup.find_all(_HIDDEN):
        tag.decompose()
    for tag in soup.find_all(href=True):
        tag["href"] = _absolute(url, str(tag["href"]))
    for tag in soup.find_all(src=True):
        tag["src"] = _absolute(url, str(tag["src"]))
    try:
        text = _Converter(heading_style=ATX, bullets="-", escape_misc=False).convert_soup(soup)
    except RecursionError:  # nested deeper than the converter recurses: the text without markup
        text = soup.get_text("\n")
    return Page(tidy(text), title or None, partial, markup_chars)


def without_hidden(markup: str) -> str:
    """``markup`` without the content of its ``script``, ``style``, ``noscript``, ``template``
    and ``svg`` elements, found by their tags in one pass (no backtracking: an element never
    closed is left for the parser, with all that follows it)."""
    lower = markup.lower()
    kept: list[str] = []
    done = 0
    for opening in _HIDDEN_OPENING.finditer(lower, done):
        if opening.start() < done:
            continue  # inside an element already cut out
        close = lower.find(f"</{opening.group(1)}", opening.end())
        if close == -1:
            break
        end = lower.find(">", close)
        end = len(markup) if end == -1 else end + 1
        kept.append(markup[done : opening.start()])
        done = end
    kept.append(markup[done:])
    return "".join(kept)


def text_page(body: bytes, charset: str | None) -> Page:
    """A text body as it is (decoded, line ends made ``\\n``)."""
    return Page(decoded(body, charset).replace("\r\n", "\n").replace("\r", "\n"))


def tidy(text: str) -> str:
    """``text`` without trailing blanks on its lines and with at most one blank line in a row."""
    lines = "\n".join(line.rstrip() for line in text.strip().splitlines())
    return _BLANK_RUNS.sub("\n\n", lines)


def _absolute(base: str, link: str) -> str:
    link = link.strip()
    if not link or link.startswith(("#", "data:", "javascript:", "mailto:", "tel:")):
        return link
    try:
        return urljoin(base, link)
    except ValueError:  # a link that does not parse (a bad IPv6 host) stays as it was written
        return link


class _Converter(MarkdownConverter):
    """Markdown without what only a browser uses: a ``data:`` image (kilobytes of base64) is
    its alt text, a ``javascript:`` or ``data:`` link its text."""

    def convert_img(self, el: Any, text: str, parent_tags: Any) -> str:
        if str(el.get("src", "")).startswith("data:"):
            alt = str(el.get("alt", "")).strip()
            return f"[image: {alt}]" if alt else ""
        return str(MarkdownConverter.convert_img(self, el, text, parent_tags))  # type: ignore[attr-defined]

    def convert_a(self, el: Any, text: str, parent_tags: Any) -> str:
        if str(el.get("href", "")).startswith(("javascript:", "data:")):
            return text
        return str(MarkdownConverter.convert_a(self, el, text, parent_tags))  # type: ignore[attr-defined]
