"""The rules of ``provider.headers``: extra HTTP headers sent on every request of the
conversation's route (an API gateway's token, a tenant id).

A header's name must be an HTTP token (letters, digits and ``!#$%&'*+-.^_`|~``), named once
whatever its case; its value printable ASCII, spaces and tabs inside it allowed but not at
either end (what an HTTP/1.1 client may send: no line break, which would start a header of
the value's choosing). The route's key is not a header of these (``Authorization``,
``X-Api-Key``: ``provider.api_key`` / ``api_key_env`` send it, decided in one place), nor are
the headers that frame the request (``Host``, ``Content-Length``, ``Transfer-Encoding``,
``Connection``), which the HTTP client sets. A value may be a secret: a problem names its key,
never its value (``header_problems``), and a warning shows names only (``shown_headers``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from dsh.config.rules import Problem
from dsh.errors import ConfigError

HEADER_NAME = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
"""An HTTP token (RFC 9110, section 5.1)."""
HEADER_VALUE = re.compile(r"(?:[\x21-\x7e]+(?:[ \t]+[\x21-\x7e]+)*)?")
"""Printable ASCII, inner spaces and tabs (RFC 9110, section 5.5, without obs-text)."""
KEY_HEADERS = frozenset({"authorization", "x-api-key"})
"""Headers that carry the route's key: the key settings send them."""
FRAMING_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
"""Headers the HTTP client sets for each request."""


def header_problems(headers: Mapping[str, str], where: str = "provider.headers") -> list[Problem]:
    """A problem for each header of ``headers`` dsh will not send, in their order; keys are
    ``where.NAME`` (an invalid name is shown escaped, as JSON)."""
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for name, value in headers.items():
        if not HEADER_NAME.fullmatch(name):
            shown = json.dumps(name)
            rule = (
                f"names a header {shown}: a header name is letters, digits and "
                "!#$%&'*+-.^_`|~ (no space, colon or line break)"
            )
            problems.append(Problem(where, rule))
            continue
        key, lower = f"{where}.{name}", name.lower()
        if lower in seen:
            problems.append(Problem(key, f"names the header {seen[lower]} a second time"))
        elif lower in KEY_HEADERS:
            rule = "is not sent: the route's key goes by provider.api_key or provider.api_key_env"
            problems.append(Problem(key, rule))
        elif lower in FRAMING_HEADERS:
            problems.append(Problem(key, "is not sent: the HTTP client sets it for each request"))
        elif not HEADER_VALUE.fullmatch(value):
            rule = (
                "must be printable ASCII, with no line break or control character and no white "
                "space at either end (the value is not shown)"
            )
            problems.append(Problem(key, rule))
        seen.setdefault(lower, name)
    return problems


def check_header_types(merged: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse a merged ``provider.headers`` value that is not a string, naming its header (a
    whole conversion would say ``provider.headers[...]``); the type, not the value, is said."""
    headers = merged.get("provider", {}).get("headers")
    if not isinstance(headers, Mapping):
        return  # not a table: the conversion says so
    for name, value in headers.items():
        if not isinstance(value, str):
            key = f"provider.headers.{name}" if HEADER_NAME.fullmatch(name) else "provider.headers"
            kind = type(value).__name__
            raise ConfigError(f"config key {key} must be a string (a header's value), not {kind}")


def shown_headers(headers: object) -> str:
    """``headers`` as a warning may show them: their names, never their values."""
    if not isinstance(headers, Mapping):
        return "(not a table)"
    return "(headers " + ", ".join(json.dumps(str(name)) for name in headers) + ")"
