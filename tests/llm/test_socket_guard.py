"""The suite-wide socket guard (tests/conftest.py): loopback only."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import NetworkBlockedError
from tests.llm.fake_server import FakeServer


def test_connect_to_a_non_loopback_address_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(NetworkBlockedError, match=r"10\.255\.255\.1"):
            sock.connect(("10.255.255.1", 443))
        with pytest.raises(NetworkBlockedError):
            sock.connect_ex(("93.184.216.34", 80))


def test_connect_by_host_name_other_than_localhost_is_refused():
    with socket.socket() as sock, pytest.raises(NetworkBlockedError):
        sock.connect(("api.deepseek.com", 443))


def test_loopback_connect_is_allowed(server: FakeServer):
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
