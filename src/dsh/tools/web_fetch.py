"""The ``web_fetch`` tool: one GET of an http(s) URL, its text for the model.

Its kind is ``network`` (``dsh.tools.approval``): asked for under ``ask`` as a shell command is,
run unasked with ``--allow network``, ``--yes`` or ``auto``, denied under ``read-only`` and in a
headless run without those flags. ``tools.web_fetch = false`` keeps it from the model.

What it sends and follows:

- Only ``http://`` and ``https://``; a URL with a user name or password (``user:pass@host``),
  white space or a control character, or holding the value of a secret dsh keeps from tools
  (``dsh.tools.secrets``: a provider key, a ``*_TOKEN``…) is refused before anything is sent.
- A plain GET with a ``User-Agent`` and an ``Accept`` header: no cookie (none is kept, not even
  between the redirects of one call), no ``Authorization``, nothing of dsh's configuration.
  Proxy variables (``HTTPS_PROXY``, ``NO_PROXY``…) are honoured, as ``curl`` does.
- Redirects are followed up to ``MAX_REDIRECTS``, each target checked as the URL was.
- The whole call (connection, redirects, body) must end within ``TIMEOUT_SECONDS``; the body is
  read up to ``MAX_BYTES`` (decompressed), then the download stops.

What it returns: a few header lines (the final URL, where it was redirected from, the page's
title, its content type and size), then the text (``dsh.tools.web_page``: HTML as Markdown,
text and JSON as they are, any other content type refused by name), cut to ``max_chars`` with a
line saying so. A status of 400 or more is an error result (``HTTP_ERROR``) with the start of
the body's text. URLs are shown as ``dsh.config.rules.redact`` shows them (a secret-looking
query parameter's value as ``***``), and the registry masks known secret values in the result,
as in every tool's output.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from dsh.config.rules import redact
from dsh.errors import ToolError
from dsh.tools.args import INVALID_ARGUMENT, int_arg, str_arg
from dsh.tools.base import ToolContext, ToolKind, ToolOutput
from dsh.tools.files import MAX_READ_CHARS
from dsh.tools.secrets import SecretPolicy

if TYPE_CHECKING:  # httpx and the HTML converter are imported by the first fetch, not at start
    import httpx

    from dsh.tools.web_page import ContentType, Page, Reading

DEFAULT_MAX_CHARS = 50_000
MAX_CHARS = MAX_READ_CHARS
"""The most one call returns: as much as one ``read_file`` call shows."""
MIN_CHARS = 100
TIMEOUT_SECONDS = 20.0
MAX_BYTES = 2 * 1024 * 1024
MAX_REDIRECTS = 5
MARKUP_PER_CHAR = 4
"""An HTML page's markup converted per character of ``max_chars``: 200,000 characters for the
default, counted without the page's scripts and styles. Converting is slow: a 2 MB page of
table rows took 43 s whole on a 2-core machine at a load of 10, 11 s for its first 400,000
characters (which gave 250,000 of text); prose gives more text than a quarter of its markup."""
ERROR_BODY_CHARS = 2000
"""How much of an error page's text an ``HTTP_ERROR`` result shows."""
_OTHER_SCHEMES = frozenset({"file", "ftp", "data", "javascript", "mailto", "about", "blob", "tel"})
"""Schemes written without ``//`` (``file:/etc/passwd``, ``data:…``): named as what they are."""
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
HEADERS = {
    "User-Agent": "dsh-web-fetch/1 (an AI coding agent's fetch tool)",
    "Accept": "text/html, application/xhtml+xml, text/plain;q=0.9, application/json;q=0.9, "
    "text/*;q=0.8, */*;q=0.1",
}
"""Every header sent, besides those httpx adds (``Host``, ``Accept-Encoding``, ``Connection``)."""


def url_problem(url: str, secrets: SecretPolicy) -> str | None:
    """Why ``url`` is not fetched (None: it may be), as the end of a sentence beginning with
    the URL: the one check the URL the model gives and every redirect's target pass."""
    if any(c.isspace() for c in url) or not url.isprintable():
        return "holds white space or a control character; give the URL without it"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- reading it checks it (a port out of range, not a number)
    except ValueError as exc:
        return f"does not parse as a URL ({exc})"
    scheme = parts.scheme.lower()
    if "://" not in url and scheme not in _OTHER_SCHEMES:  # example.com:80 parses as a scheme
        meant = "https://" + url.lstrip("/")
        return (
            f"has no scheme: web_fetch takes an http:// or https:// URL (did you mean {meant!r}?)"
        )
    if scheme not in ("http", "https"):
        return f"has the scheme {scheme!r}: web_fetch takes only http:// and https:// URLs"
    if not parts.hostname:
        return "has no host"
    if parts.username is not None or parts.password is not None:
        return "holds a user name or password (user:pass@): web_fetch sends no credentials"
    plain = unquote(url)
    for name, value in secrets.values:
        if value in url or value in plain:
            return (
                f"holds the value of {name}, a secret dsh keeps from tools: web_fetch does not "
                "send it"
            )
    return None


@dataclass(slots=True)
class Fetched:
    """One call's last answer: where it came from, how, and its body (as far as read)."""

    url: str
    status: int
    reason: str
    content_type: ContentType
    reading: Reading | None
    body: bytes = b""
    cut: bool = False
    """The body went on past what was read (``MAX_BYTES``)."""
    redirected_from: list[str] = field(default_factory=list)


class WebFetchTool:
    """GET an http(s) URL and return its text (HTML as Markdown)."""

    name: str = "web_fetch"
    kind: ToolKind = "network"
    description: str = (
        "Fetch an http(s) URL with GET and return its text: HTML as Markdown, plain text and "
        "JSON as they are; binary content is refused. Sends no cookies or credentials."
    )
    """Short: every request carries it, and a 4,096-token window has little room
    (``dsh.agent.room``). The limits are said by the result when they apply."""

    def __init__(
        self,
        secrets: SecretPolicy | None = None,
        *,
        timeout: float = TIMEOUT_SECONDS,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.secrets = secrets or SecretPolicy()
        """URLs holding a secret's value are refused; the text is never cut inside one."""
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http:// or https:// URL."},
                "max_chars": {
                    "type": "integer",
                    "minimum": MIN_CHARS,
                    "maximum": MAX_CHARS,
                    "description": f"Most characters returned. Default {DEFAULT_MAX_CHARS}.",
                },
            },
            "required": ["url"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Fetch ``args.url``; every failure is a ``ToolError`` with its code."""
        import httpx

        url = str_arg(args, "url").strip()
        max_chars = int_arg(args, "max_chars", DEFAULT_MAX_CHARS, minimum=MIN_CHARS)
        max_chars = min(max_chars, MAX_CHARS)
        problem = url_problem(url, self.secrets)
        if problem is not None:
            raise ToolError(f"web_fetch: {_shown(url)} {problem}", code=INVALID_ARGUMENT)
        try:
            async with asyncio.timeout(self.timeout):
                fetched = await self._fetch(url)
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise ToolError(
                f"web_fetch: {_shown(url)} did not answer in full within {self.timeout:g} s",
                code="TIMEOUT",
            ) from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # InvalidURL: httpx's own parse
            raise ToolError(
                f"web_fetch: could not fetch {_shown(url)}: {_describe(exc)}", code="FETCH_FAILED"
            ) from exc
        return await asyncio.to_thread(self._answer, fetched, max_chars)

    async def _fetch(self, url: str) -> Fetched:
        """GET ``url``, following redirects; the body read only when it is text."""
        import httpx

        hops: list[str] = []
        async with httpx.AsyncClient(
            headers=HEADERS, follow_redirects=False, timeout=self.timeout
        ) as client:
            current = httpx.URL(url)
            while True:
                client.cookies.clear()  # a cookie a redirect set is not sent to the next hop
                async with client.stream("GET", current) as response:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECT_CODES and location:
                        current = self._next_hop(current, location, hops)
                        continue
                    return await self._read(response, str(current), hops)

    def _next_hop(self, current: httpx.URL, location: str, hops: list[str]) -> httpx.URL:
        """Where a redirect from ``current`` leads, checked; ``hops`` gets ``current``."""
        import httpx

        hops.append(str(current))
        try:
            target = str(current.join(location.strip()))
        except httpx.InvalidURL as exc:
            raise ToolError(
                f"web_fetch: {_shown(str(current))} redirected to {location!r}, which does not "
                f"parse ({exc})",
                code="FETCH_FAILED",
            ) from exc
        problem = url_problem(target, self.secrets)
        if problem is not None:
            raise ToolError(
                f"web_fetch: {_shown(str(current))} redirected to {_shown(target)}, which "
                f"{problem}; it was not followed",
                code="FETCH_FAILED",
            )
        if len(hops) > MAX_REDIRECTS:
            raise ToolError(
                f"web_fetch: {_shown(hops[0])} redirected more than {MAX_REDIRECTS} times "
                f"(the last to {_shown(target)}); it was not followed further",
                code="TOO_MANY_REDIRECTS",
            )
        return httpx.URL(target)

    async def _read(self, response: httpx.Response, url: str, hops: list[str]) -> Fetched:
        from dsh.tools.web_page import ContentType, sniff

        content_type = ContentType.parse(response.headers.get("content-type"))
        fetched = Fetched(
            url,
            response.status_code,
            response.reason_phrase,
            content_type,
            content_type.reading(),
            redirected_from=hops,
        )
        if fetched.reading is None and content_type.media:
            return fetched  # not text: refused by its type, the body left unread
        limit = self.max_bytes if response.status_code < 400 else ERROR_BODY_CHARS * 4
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                fetched.cut = True
                break
        fetched.body = b"".join(chunks)[:limit]
        if not content_type.media:
            fetched.reading = sniff(fetched.body)
        return fetched

    def _answer(self, fetched: Fetched, max_chars: int) -> ToolOutput:
        """The result for ``fetched``: its header lines and text, or an error result."""
        shown = _shown(fetched.url)
        media = fetched.content_type.media or "no content type"
        if fetched.status >= 400:
            text = ""
            if fetched.reading is not None:
                text = self._page(fetched).text
                if len(text) > ERROR_BODY_CHARS:
                    cut = self.secrets.safe_cut(text, ERROR_BODY_CHARS)
                    text = f"{text[:cut]}\n[… the rest of the error page is not shown]"
            head = f"web_fetch: {shown} answered HTTP {fetched.status} {fetched.reason}".rstrip()
            return ToolOutput(
                f"{head}" + (f"; the page says:\n\n{text}" if text else ""),
                is_error=True,
                code="HTTP_ERROR",
            )
        if not 200 <= fetched.status < 300:
            raise ToolError(
                f"web_fetch: {shown} answered HTTP {fetched.status} {fetched.reason}, which "
                "web_fetch does not follow",
                code="HTTP_ERROR",
            )
        if fetched.reading is None:
            what = f"is {media}" if fetched.content_type.media else "has no content type"
            raise ToolError(
                f"web_fetch: {shown} {what} and is not text: web_fetch reads HTML, plain text, "
                "JSON and XML only",
                code="UNSUPPORTED_CONTENT",
            )
        max_markup = MARKUP_PER_CHAR * max_chars
        page = self._page(fetched, max_markup)
        lines = [f"URL: {shown}"]
        if fetched.redirected_from:
            lines.append(f"Redirected from: {_shown(fetched.redirected_from[0])}")
        if page.title:
            lines.append(f"Title: {page.title}")
        size = f"{len(fetched.body):,} bytes" + (" read" if fetched.cut else "")
        lines += [f"Content-Type: {media} ({size})", ""]
        lines.append(self._capped(page, max_chars) if page.text else "(no text)")
        if page.partial and len(page.text) <= max_chars:
            lines.append(
                f"\n[the page's markup is {page.markup_chars:,} characters without its scripts "
                f"and styles: only the first {max_markup:,} were converted, so the text above "
                f"is the page's start; {_more(max_chars)}]"
            )
        if fetched.cut:
            lines.append(
                f"[the body is longer than {self.max_bytes:,} bytes: only that much was "
                "downloaded, the rest was not]"
            )
        return ToolOutput("\n".join(lines))

    def _page(self, fetched: Fetched, max_markup: int | None = None) -> Page:
        from dsh.tools.web_page import html_page, text_page

        charset = fetched.content_type.charset
        if fetched.reading == "html":
            return html_page(fetched.body, charset, fetched.url, max_markup)
        return text_page(fetched.body, charset)

    def _capped(self, page: Page, max_chars: int) -> str:
        """``page``'s text cut to ``max_chars`` (never inside a secret's value), with a line
        saying how much was left out and how to see more."""
        text = page.text
        if len(text) <= max_chars:
            return text
        cut = self.secrets.safe_cut(text, max_chars)
        total = f"more than {len(text):,}" if page.partial else f"{len(text):,}"
        return (
            f"{text[:cut]}\n\n[cut: the first {cut:,} of the text's {total} characters are "
            f"shown; {_more(max_chars)}]"
        )


def _more(max_chars: int) -> str:
    if max_chars < MAX_CHARS:
        return f"call web_fetch again with a larger max_chars (at most {MAX_CHARS:,}) to see more"
    return f"at most {MAX_CHARS:,} characters are shown"


def _shown(url: str) -> str:
    """``url`` as a result shows it: a secret-looking query parameter's value as ``***``."""
    return str(redact(url))


def _describe(exc: Exception) -> str:
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
