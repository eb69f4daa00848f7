"""``GET /api/hello?nonce=N``: the server proves it knows the token without revealing it.

An open page sends its token on every API call and live stream. Once ``dsh web`` stops, its
port is free: another local user can listen there, and a page retrying with the token every
second would hand it over (with a persistent ``DSH_WEB_TOKEN``, the key to the user's next
``dsh web``). So after any disconnect the page's script (``static/hello.js``) sends nothing
with the token until the server at its address has answered this route: a fresh random nonce
in, ``{"proof": hex(HMAC-SHA256(key, "dsh-web-hello\\n" + Host + "\\n" + nonce))}`` out, which
the page checks with WebCrypto. A server that cannot answer it (another program, a ``dsh web``
with another token, an older one) is not sent the token again: the page says to reload from the
URL ``dsh web`` printed.

- The key is the token stretched with PBKDF2-SHA256 (:data:`ITERATIONS`, salt :data:`SALT`),
  derived once per server (in a worker thread, at the first hello) and once per page: a proof
  is a known message's MAC, so it lets its holder test guesses of the token offline; stretched,
  each guess costs as much as about a thousand of the server's online answers, so a weak
  ``--token`` is no weaker for this route. A 256-bit random token is out of reach either way.
- The ``Host`` the request came to is in the message: a program on the freed port that relays
  the page's nonce to a ``dsh web`` elsewhere with the same token gets a proof for that
  server's ``Host`` (a loopback server answers to no other), which the page refuses.
- The route needs no token and is not rate limited (one HMAC per answer, the key cached); it
  compares nothing secret, so it has no timing to leak. A nonce outside :data:`NONCE_PATTERN`
  (16 to 128 URL-safe characters; the page sends 43) is a one-line ``400``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dsh.web.auth import HELLO_PATH
from dsh.web.errors import bad_request

ITERATIONS = 100_000
"""PBKDF2 rounds of the hello key (``static/hello.js`` uses the same)."""
SALT = b"dsh-web-hello"
CONTEXT = "dsh-web-hello"
NONCE_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,128}")
BAD_NONCE = "nonce must be 16 to 128 characters of letters, digits, - and _"


def hello_key(token: str) -> bytes:
    """The HMAC key of the hello proofs: ``token`` stretched with PBKDF2-SHA256."""
    return hashlib.pbkdf2_hmac("sha256", token.encode(), SALT, ITERATIONS)


def hello_message(host: str, nonce: str) -> bytes:
    """What a proof signs: the route's name, the ``Host`` asked and the page's nonce."""
    return f"{CONTEXT}\n{host}\n{nonce}".encode()


def hello_proof(key: bytes, host: str, nonce: str) -> str:
    """The proof for ``nonce`` asked at ``host``, in hex."""
    return hmac.new(key, hello_message(host, nonce), hashlib.sha256).hexdigest()


def proof_matches(key: bytes, host: str, nonce: str, proof: str) -> bool:
    """Whether ``proof`` is the one for ``nonce`` at ``host`` (constant-time)."""
    return hmac.compare_digest(hello_proof(key, host, nonce).encode(), proof.encode())


def hello_route(token: str) -> Route:
    """``GET /api/hello?nonce=N``: the proof, for anyone who asks."""
    key: list[bytes] = []  # derived at the first hello, off the event loop

    async def hello(request: Request) -> Response:
        nonce = request.query_params.get("nonce", "")
        if not NONCE_PATTERN.fullmatch(nonce):
            raise bad_request(BAD_NONCE)
        if not key:
            key.append(await asyncio.to_thread(hello_key, token))
        proof = hello_proof(key[0], request.headers.get("host", ""), nonce)
        return JSONResponse({"proof": proof})

    return Route(HELLO_PATH, hello, methods=["GET"])
