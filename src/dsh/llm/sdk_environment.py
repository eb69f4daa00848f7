"""The headers the provider SDKs add on their own, kept to the service they are for.

When a client is built, the OpenAI SDK turns ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID`` into
``OpenAI-Organization`` / ``OpenAI-Project`` headers and each ``Name: value`` line of
``OPENAI_CUSTOM_HEADERS`` into a header; the Anthropic SDK does the latter with
``ANTHROPIC_CUSTOM_HEADERS``. Both add them to every request, and an ``Authorization`` among
them replaces the client's own key. They are the user's settings for OpenAI's or Anthropic's
own API: a client for any other server (a ``--base-url``, DeepSeek) is given
``default_headers`` that cancel each of them with the SDK's ``Omit`` and send the route's own
key instead (``cancelling_headers``). The names are read from the process environment, where
the SDKs read them, and it is only read: changing it would change it for the whole process,
threads included.

Both SDKs also describe the machine on every request: ``X-Stainless-OS``, ``-Arch``,
``-Runtime``, ``-Runtime-Version``, ``-Lang``, ``-Package-Version`` and ``-Async`` are among a
client's default headers, and ``X-Stainless-Retry-Count``, ``-Read-Timeout`` (and Anthropic's
``-Timeout``) are added as each request is built. Another server gets none of them: the
default ones are cancelled in ``default_headers`` (``platform_headers_dropped``) and the
per-request ones in each request's ``extra_headers`` (``request_platform_headers_dropped``),
the only place the OpenAI SDK looks before adding them. Their ``User-Agent`` names the SDK and
its version (``OpenAI/Python 2.x``); another server is told ``dsh/<version>`` instead, which
says what is calling without describing the machine.

What the user sends on purpose (``provider.headers``) goes in ``default_headers`` after all of
these, so it wins over a cancelled name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TypeVar

OPENAI_CUSTOM_HEADERS = "OPENAI_CUSTOM_HEADERS"
ANTHROPIC_CUSTOM_HEADERS = "ANTHROPIC_CUSTOM_HEADERS"

Omitted = TypeVar("Omitted")
"""The SDK's ``Omit`` (each SDK has its own class)."""


def custom_header_names(variable: str) -> list[str]:
    """The header names the environment variable ``variable`` makes the SDKs add, read as both
    SDKs read it: each line holding a colon names one header, the text before its first colon
    with the white space around it stripped (so a name may be empty, and one name may come in
    several cases)."""
    text = os.environ.get(variable)
    if text is None:
        return []
    return [line[: line.find(":")].strip() for line in text.split("\n") if ":" in line]


def cancelling_headers(
    variable: str, own: Mapping[str, str], omit: Omitted
) -> dict[str, str | Omitted]:
    """``default_headers`` for a client that must send none of ``variable``'s headers: each name
    it adds mapped to ``omit`` (the SDK's ``Omit()``, which drops the header), then ``own`` (the
    route's key, as the SDK itself would send it), which replaces a name of its in any case.
    A name of ``own``'s is never mapped to ``omit``: that would drop the route's key too."""
    mine = {name.lower() for name in own}
    headers: dict[str, str | Omitted] = {
        name: omit for name in custom_header_names(variable) if name.lower() not in mine
    }
    headers.update(own)
    return headers


PLATFORM_PREFIX = "x-stainless-"
"""What the SDKs' platform headers are named (any case)."""
REQUEST_PLATFORM_HEADERS = (
    "X-Stainless-Retry-Count",
    "X-Stainless-Read-Timeout",
    "X-Stainless-Timeout",
)
"""The platform headers the SDKs add as they build each request, not among a client's default
headers."""


def dsh_user_agent() -> str:
    """The ``User-Agent`` dsh sends a server that is not its SDK's own: ``dsh/<version>``
    (``importlib.metadata`` imported here: it pulls ``email`` and ``zipfile`` in, which the
    terminal UI's first frame must not wait for)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("dsh")
    except PackageNotFoundError:  # a source tree run without installing it
        found = "unknown"
    return f"dsh/{found}"


def platform_headers_dropped(
    default_headers: Mapping[str, object], omit: Omitted
) -> dict[str, str | Omitted]:
    """``default_headers`` for a client that must send none of its SDK's platform headers: each
    ``X-Stainless-*`` name among a built client's ``default_headers`` mapped to ``omit``, and
    dsh's own ``User-Agent`` in place of the SDK's."""
    dropped: dict[str, str | Omitted] = {
        name: omit for name in default_headers if name.lower().startswith(PLATFORM_PREFIX)
    }
    dropped["User-Agent"] = dsh_user_agent()
    return dropped


def request_platform_headers_dropped(omit: Omitted) -> dict[str, Omitted]:
    """``extra_headers`` for each request of such a client: the platform headers the SDKs add
    as they build a request, each mapped to ``omit`` (the OpenAI SDK adds them unless the
    request's own headers name them)."""
    return dict.fromkeys(REQUEST_PLATFORM_HEADERS, omit)
