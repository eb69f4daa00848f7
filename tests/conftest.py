"""Suite-wide fixtures."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# The suite's property tests draw the same examples on every run unless asked otherwise: a run
# of CI (or of the README's test command) never turns red on a draw the last one did not make.
# DSH_HYPOTHESIS_EXPLORE=1 draws fresh examples, to look for new failures; a failure found so
# is pinned with an @example before it is fixed.
# No property test has a deadline or fails for slow data generation: on a loaded machine an
# example can take many times its usual time (CI went red on a 285 ms example of a 200 ms
# deadline), and a timing is not what these tests pin.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("dsh", derandomize=True, **_UNTIMED)
settings.register_profile("explore", derandomize=False, **_UNTIMED)
settings.load_profile("explore" if os.environ.get("DSH_HYPOTHESIS_EXPLORE") else "dsh")


class NetworkBlockedError(RuntimeError):
    """A test tried to reach a non-loopback address."""


def _allowed(family: int, address: Any) -> bool:
    if family == getattr(socket, "AF_UNIX", None):
        return True
    if family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
        return False
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode()
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False  # a host name other than localhost would need DNS: not loopback
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _guarded(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(sock: socket.socket, address: Any) -> Any:
        if not _allowed(sock.family, address):
            # Not an OSError: code that treats network failures as ordinary must not swallow it.
            raise NetworkBlockedError(
                f"tests may only connect to loopback or unix sockets, not {address!r} "
                "(socket guard in tests/conftest.py)"
            )
        return original(sock, address)

    return connect


@pytest.fixture(autouse=True)
def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse every connect() that is not to 127.0.0.0/8, ::1, localhost or a unix socket."""
    monkeypatch.setattr(socket.socket, "connect", _guarded(socket.socket.connect))
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded(socket.socket.connect_ex))


@pytest.fixture(autouse=True)
def _private_dirs(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every test (and every process it starts) gets its own dsh home and XDG directories:
    nothing a test writes — a store, a span cache, a summary cache — lands in the user's real
    data, and no user config leaks into a test. A test that needs other values sets its own."""
    root = tmp_path_factory.mktemp("private")
    for name in [n for n in os.environ if n.startswith("DSH_")]:  # a developer's shell settings
        monkeypatch.delenv(name)
    monkeypatch.setenv("DSH_HOME", str(root / "dsh-home"))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(root / name.lower()))
