"""``GET /api/hello?nonce=N`` (``dsh.web.hello``): the server proves it knows the token without
revealing it, so a page asks it before it sends the token again after a disconnect. The proof
is HMAC-SHA256 under the PBKDF2-stretched token over the ``Host`` asked and the nonce; no token
is needed and none is counted; an absurd nonce is a one-line 400. Real app, TestClient."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from starlette.testclient import TestClient

from dsh.web import create_app
from dsh.web.auth import FailureLimiter, loopback_hosts
from dsh.web.hello import ITERATIONS, hello_key, proof_matches
from tests.web.conftest import AUTH, TOKEN, WebEnv, error_of

NONCE = "n" * 43


def expected_proof(token: str, host: str, nonce: str) -> str:
    """The proof as the page computes it (WebCrypto's PBKDF2, then HMAC), written out again."""
    key = hashlib.pbkdf2_hmac("sha256", token.encode(), b"dsh-web-hello", ITERATIONS)
    message = f"dsh-web-hello\n{host}\n{nonce}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def hello(client: TestClient, nonce: str, **headers: str) -> tuple[int, dict[str, object]]:
    response = client.get("/api/hello", params={"nonce": nonce}, headers=headers)
    assert TOKEN not in response.text
    return response.status_code, response.json()


def test_the_proof_is_the_tokens_hmac_over_the_host_and_nonce_asked_without_a_token(
    env: WebEnv,
) -> None:
    with TestClient(env.app(), base_url="http://127.0.0.1:3080") as client:
        status, body = hello(client, NONCE)
        assert status == 200 and set(body) == {"proof"}
        proof = body["proof"]
        assert isinstance(proof, str)
        assert hmac.compare_digest(proof, expected_proof(TOKEN, "127.0.0.1:3080", NONCE))
        assert proof_matches(hello_key(TOKEN), "127.0.0.1:3080", NONCE, proof)
        # another token cannot make it, and it says nothing that is the token
        assert not hmac.compare_digest(
            proof, expected_proof("another-token", "127.0.0.1:3080", NONCE)
        )
        # a fresh nonce, a fresh proof: nothing to replay
        other = "m" * 43
        assert hello(client, other)[1]["proof"] == expected_proof(TOKEN, "127.0.0.1:3080", other)
        # the token, right or wrong, is neither needed nor looked at
        assert hello(client, NONCE, **AUTH)[1]["proof"] == proof
        assert hello(client, NONCE, Authorization="Bearer wrong")[1]["proof"] == proof


def test_the_proof_is_bound_to_the_host_the_request_came_to(env: WebEnv) -> None:
    """A program on a freed port that relays the page's nonce to a dsh web elsewhere gets that
    server's Host signed, not the page's; and a loopback server answers no other Host."""
    with TestClient(env.app()) as client:
        here = hello(client, NONCE, Host="127.0.0.1:3080")[1]["proof"]
        there = hello(client, NONCE, Host="127.0.0.1:3081")[1]["proof"]
        assert here == expected_proof(TOKEN, "127.0.0.1:3080", NONCE)
        assert there == expected_proof(TOKEN, "127.0.0.1:3081", NONCE)
        assert not proof_matches(hello_key(TOKEN), "127.0.0.1:3080", NONCE, str(there))
    app = create_app(env.registry(), token=TOKEN, allowed_hosts=loopback_hosts("127.0.0.1", 3081))
    with TestClient(app, base_url="http://127.0.0.1:3081") as client:
        assert hello(client, NONCE)[0] == 200
        status, _ = hello(client, NONCE, Host="127.0.0.1:3080")
        assert status == 403


@pytest.mark.parametrize(
    "nonce",
    [
        "",
        "short",
        "n" * 15,
        "n" * 129,
        "n" * 4000,
        "n" * 42 + "\n",
        "n" * 42 + "=",
        "n" * 20 + " " + "n" * 20,
        "n" * 20 + "é" + "n" * 20,
    ],
    ids=["empty", "short", "15", "129", "4000", "newline", "padding", "space", "accent"],
)
def test_an_absurd_nonce_is_a_one_line_400(env: WebEnv, nonce: str) -> None:
    with TestClient(env.app()) as client:
        response = client.get("/api/hello", params={"nonce": nonce})
        assert error_of(response) == (400, "INVALID_ARGUMENT")
        message = response.json()["error"]["message"]
        assert message == "nonce must be 16 to 128 characters of letters, digits, - and _"
        assert nonce not in message or not nonce
        assert error_of(client.get("/api/hello")) == (400, "INVALID_ARGUMENT")


def test_the_edges_of_the_nonce_are_answered(env: WebEnv) -> None:
    with TestClient(env.app()) as client:
        for nonce in ("a" * 16, "Az09-_" * 21 + "xy"):
            assert hello(client, nonce)[0] == 200


def test_hellos_are_cheap_and_never_rate_limited(
    env: WebEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is stretched once per server; an address past the wrong tokens' limit (its wrong
    tokens answered 429) is still answered, and hellos count as no guess."""
    derived: list[str] = []

    def counted(token: str) -> bytes:
        derived.append(token)
        return hello_key(token)

    monkeypatch.setattr("dsh.web.hello.hello_key", counted)
    limiter = FailureLimiter(limit=3)
    with TestClient(create_app(env.registry(), token=TOKEN, limiter=limiter)) as client:
        for i in range(60):
            assert hello(client, f"{i:0>16}")[0] == 200
        assert derived == [TOKEN]
        for i in range(3):
            bad = client.get("/api/warnings", headers={"Authorization": f"Bearer wrong-{i}"})
            assert bad.status_code == 401
        assert client.get("/api/warnings", headers={"Authorization": "Bearer x"}).status_code == 429
        assert hello(client, NONCE)[0] == 200
