"""``web_fetch`` against a real HTTP server on 127.0.0.1 (``tests/tools/web_server.py``), through
the registry as the loop calls it (so the masking every output gets is in the picture)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from dsh.config import ToolSettings
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.registry import ToolRegistry, default_tools
from dsh.tools.secrets import SecretPolicy
from dsh.tools.web_fetch import DEFAULT_MAX_CHARS, MAX_BYTES, WebFetchTool
from dsh.tools.web_page import without_hidden
from tests.tools.web_server import HUGE_LIMIT, SECRET, Seen, serving

SECRETS = SecretPolicy(values=(("MY_TOKEN", SECRET),))


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tool honours proxy variables; these tests talk to 127.0.0.1 directly."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def server() -> Iterator[tuple[str, Seen]]:
    with serving() as running:
        yield running


def fetch(ctx: ToolContext, url: str, *, timeout: float = 20.0, **args: Any) -> ToolOutput:
    registry = ToolRegistry([WebFetchTool(SECRETS, timeout=timeout)], SECRETS)
    arguments = json.dumps({"url": url, **args})
    return asyncio.run(registry.execute("c1", "web_fetch", arguments, ctx, ApprovalPolicy("auto")))


def test_an_html_page_reads_as_markdown_without_scripts_with_absolute_links(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, _ = server
    out = fetch(ctx, f"{base}/docs/page.html")
    assert not out.is_error, out.text
    head, _, body = out.text.partition("\n\n")
    assert head.splitlines() == [
        f"URL: {base}/docs/page.html",
        "Title: The Guide",
        "Content-Type: text/html (448 bytes)",
    ]
    assert "# Install" in body
    assert "Run `pip install thing` and then **restart**." in body
    assert "- one\n- two" in body
    assert f"[Next page]({base}/docs/next.html)" in body  # relative link made absolute
    assert "[image: logo]" in body  # a data: image is its alt text, not its base64
    for hidden in ("SCRIPT-TEXT", "NOSCRIPT-TEXT", "color: red", "base64"):
        assert hidden not in out.text


def test_a_page_in_another_charset_is_decoded_by_it(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, _ = server
    assert "café crème" in fetch(ctx, f"{base}/latin1.html").text


@pytest.mark.parametrize(
    ("path", "media", "text"),
    [
        ("/plain.txt", "text/plain", "line one\nline two\n"),
        ("/data.json", "application/json", '{"name": "dsh", "tags": ["a", "b"]}'),
        ("/untyped", "no content type", "just some text\n"),
    ],
)
def test_text_and_json_pass_as_they_are(
    server: tuple[str, Seen], ctx: ToolContext, path: str, media: str, text: str
) -> None:
    base, _ = server
    out = fetch(ctx, base + path)
    assert not out.is_error, out.text
    head, _, body = out.text.partition("\n\n")
    assert head.splitlines()[-1].startswith(f"Content-Type: {media} (")
    assert body == text


def test_a_redirect_chain_is_followed_without_cookies_or_credentials(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, seen = server
    out = fetch(ctx, f"{base}/hop/4")  # 5 redirects: the most followed
    assert not out.is_error, out.text
    assert out.text.startswith(f"URL: {base}/headers\nRedirected from: {base}/hop/4\n")
    assert [path for path, _ in seen.requests] == [
        "/hop/4", "/hop/3", "/hop/2", "/hop/1", "/hop/0", "/headers"
    ]  # fmt: skip
    for _, headers in seen.requests:  # every hop set a cookie; none came back
        assert "cookie" not in headers
        assert "authorization" not in headers
        assert set(headers) <= {"host", "accept", "accept-encoding", "connection", "user-agent"}


def test_a_sixth_redirect_is_not_followed(server: tuple[str, Seen], ctx: ToolContext) -> None:
    base, seen = server
    out = fetch(ctx, f"{base}/hop/5")
    assert (out.is_error, out.code) == (True, "TOO_MANY_REDIRECTS")
    assert out.text == (
        f"web_fetch: {base}/hop/5 redirected more than 5 times (the last to {base}/headers); "
        "it was not followed further"
    )
    assert "/headers" not in [path for path, _ in seen.requests]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/to-file", "which has the scheme 'file': web_fetch takes only http:// and https://"),
        ("/to-userinfo", "which holds a user name or password (user:pass@)"),
    ],
)
def test_each_redirect_target_is_checked_as_the_url_is(
    server: tuple[str, Seen], ctx: ToolContext, path: str, why: str
) -> None:
    base, seen = server
    out = fetch(ctx, base + path)
    assert (out.is_error, out.code) == (True, "FETCH_FAILED")
    assert why in out.text
    assert out.text.endswith("; it was not followed")
    assert [p for p, _ in seen.requests] == [path]
    assert "pw" not in out.text


def test_a_huge_body_stops_downloading_at_the_cap_and_says_so(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, seen = server
    out = fetch(ctx, f"{base}/huge")
    assert not out.is_error, out.text
    assert f"Content-Type: text/plain ({MAX_BYTES:,} bytes read)" in out.text
    assert out.text.endswith(
        f"[the body is longer than {MAX_BYTES:,} bytes: only that much was downloaded, the "
        "rest was not]"
    )
    assert f"the first {DEFAULT_MAX_CHARS:,} of the text's {MAX_BYTES:,} characters" in out.text
    assert len(out.text) < DEFAULT_MAX_CHARS + 1000
    # the client stopped reading: the server could not write all it had (it would block)
    assert seen.huge_sent < HUGE_LIMIT


def test_the_text_is_cut_at_max_chars_with_a_line_saying_how_to_see_more(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, _ = server
    out = fetch(ctx, f"{base}/long.txt", max_chars=1000)
    body = out.text.split("\n\n", 1)[1]
    assert body == (
        "0123456789" * 100 + "\n\n[cut: the first 1,000 of the text's 10,000 characters are "
        "shown; call web_fetch again with a larger max_chars (at most 100,000) to see more]"
    )


def test_only_the_start_of_a_long_pages_markup_is_converted_and_the_result_says_so(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, _ = server
    out = fetch(ctx, f"{base}/busy.html", max_chars=100)  # 400 characters of markup converted
    body = out.text.split("\n\n", 1)[1]
    assert body == (
        "word\n\nword\n\nword\n\nword\n\nword\n\n[the page's markup is 13,226 characters without "
        "its scripts and styles: only the first 400 were converted, so the text above is the "
        "page's start; call web_fetch again with a larger max_chars (at most 100,000) to see "
        "more]"
    )
    whole = fetch(ctx, f"{base}/busy.html", max_chars=5000)
    assert whole.text.count("word") == 200
    assert "markup" not in whole.text


def test_a_pages_scripts_do_not_count_against_the_markup_converted(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, _ = server  # 5,500 characters of script, then the text: 400 characters converted
    out = fetch(ctx, f"{base}/scripted.html", max_chars=100)
    assert out.text.endswith("\n\nvisible")


def test_scripts_and_styles_are_cut_out_before_the_page_is_parsed() -> None:
    page = (
        "<p>a</p><SCRIPT type=x>if (a < b) { '</p>' }</script ><p>b</p>"
        "<style>p { x: '<p>' }</style><svg><text>c</text></svg><p>d</p><script>never closed"
    )
    assert without_hidden(page) == "<p>a</p><p>b</p><p>d</p><script>never closed"


@pytest.mark.parametrize("path", ["/silent", "/trickle"])
def test_a_server_that_does_not_answer_in_time_is_a_timeout(
    server: tuple[str, Seen], ctx: ToolContext, path: str
) -> None:
    """``/silent`` never answers; ``/trickle`` sends a byte every 50 ms, so no one read waits
    past the timeout, but its body would take 50 s: the deadline is the whole call's. Neither
    answers in full while the test runs: no race."""
    base, _ = server
    out = fetch(ctx, base + path, timeout=0.5)
    assert (out.is_error, out.code) == (True, "TIMEOUT")
    assert out.text == f"web_fetch: {base}{path} did not answer in full within 0.5 s"


@pytest.mark.parametrize(
    ("path", "said"), [("/image.png", "is image/png"), ("/binary", "has no content type")]
)
def test_binary_content_is_refused_by_name(
    server: tuple[str, Seen], ctx: ToolContext, path: str, said: str
) -> None:
    base, _ = server
    out = fetch(ctx, base + path)
    assert (out.is_error, out.code) == (True, "UNSUPPORTED_CONTENT")
    assert out.text == (
        f"web_fetch: {base}{path} {said} and is not text: web_fetch reads HTML, plain text, "
        "JSON and XML only"
    )


def test_an_error_status_is_an_error_result_with_the_pages_text(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, _ = server
    out = fetch(ctx, f"{base}/missing")
    assert (out.is_error, out.code) == (True, "HTTP_ERROR")
    assert out.text == (
        f"web_fetch: {base}/missing answered HTTP 404 Not Found; the page says:\n\n# No such page"
    )
    teapot = fetch(ctx, f"{base}/teapot")  # a body that is not text is not shown
    assert teapot.text == f"web_fetch: {base}/teapot answered HTTP 418 I'm a Teapot"


def test_a_refused_connection_is_one_line_saying_so(ctx: ToolContext) -> None:
    with socket.socket() as sock:  # a port nobody listens on once it is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = fetch(ctx, f"http://127.0.0.1:{port}/x")
    assert (out.is_error, out.code) == (True, "FETCH_FAILED")
    assert out.text.startswith(f"web_fetch: could not fetch http://127.0.0.1:{port}/x: Connect")
    assert "\n" not in out.text


def test_a_secret_in_the_page_is_masked_as_in_every_tool_output(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, _ = server
    out = fetch(ctx, f"{base}/secret.txt")
    assert "the key is [masked MY_TOKEN] here" in out.text
    assert SECRET not in out.text


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com/f", "has the scheme 'ftp': web_fetch takes only http:// and https://"),
        ("file:///etc/passwd", "has the scheme 'file'"),
        ("javascript:alert(1)", "has the scheme 'javascript'"),
        (
            "example.com/docs",
            "has no scheme: web_fetch takes an http:// or https:// URL (did "
            "you mean 'https://example.com/docs'?)",
        ),
        ("http://user:pw@127.0.0.1/", "holds a user name or password (user:pass@)"),
        ("http://exa mple.com/", "holds white space or a control character"),
        ("http://[::1/", "does not parse as a URL"),
        ("http:///path", "has no host"),
        (f"http://127.0.0.1/?q={SECRET}", "holds the value of MY_TOKEN, a secret dsh keeps"),
        ("http://127.0.0.1/?q=sk-test-THE-SECRET%2DVALUE-1234", "holds the value of MY_TOKEN"),
    ],
)
def test_a_url_it_does_not_fetch_is_refused_before_anything_is_sent(
    server: tuple[str, Seen], ctx: ToolContext, url: str, why: str
) -> None:
    _, seen = server
    out = fetch(ctx, url)
    assert (out.is_error, out.code) == (True, "INVALID_ARGUMENT")
    assert out.text.startswith("web_fetch: ")
    assert why in out.text
    assert SECRET not in out.text and "pw@" not in out.text
    assert seen.requests == []


def test_a_secret_looking_query_value_is_not_shown_in_the_result(
    server: tuple[str, Seen], ctx: ToolContext
) -> None:
    base, seen = server
    out = fetch(ctx, f"{base}/plain.txt?api_key=abc123&page=2")
    assert out.text.startswith(f"URL: {base}/plain.txt?api_key=***&page=2\n")
    assert seen.requests[0][0] == "/plain.txt?api_key=abc123&page=2"  # sent as given


def test_max_chars_is_bounded_by_the_schema(ctx: ToolContext) -> None:
    out = fetch(ctx, "http://127.0.0.1:9/", max_chars=100_001)
    assert (out.code, out.text) == (
        "INVALID_ARGUMENT",
        "web_fetch: max_chars must be at most 100000, got 100001",
    )


def test_the_tool_is_on_by_default_and_comes_last() -> None:
    assert ToolSettings().web_fetch is True  # the builder passes it to default_tools
    tools = default_tools(web_fetch=True)
    assert [tool.name for tool in tools] == [
        *(tool.name for tool in default_tools()),
        "web_fetch",
    ]
    assert tools[-1].kind == "network"
