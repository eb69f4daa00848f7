"""Fixtures for the web tests: a store in a temp dir, the keyless scripted provider injected
through ``WebRuntime``, Starlette's TestClient, and (for browser tests) Debian's chromium."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dsh.agent.runtime import Route
from dsh.config import CompactionSettings, Settings, ToolSettings
from dsh.events import Event
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.store import JsonlStore
from dsh.store.integrity import unseal
from dsh.web import SessionRegistry, WebRuntime, create_app

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
NOTES = "\n".join(f"line {i}: the quick brown fox" for i in range(60))


class SlowProvider:
    """A provider that streams another provider's events with a pause between them, so a
    browser can watch text being typed."""

    def __init__(self, inner: ScriptedProvider, delay: float) -> None:
        self.inner = inner
        self.delay = delay
        self.name = inner.name

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        async for event in self.inner.stream(request, history=history):
            await asyncio.sleep(self.delay)
            yield event


@dataclass
class WebEnv:
    root: Path
    workspace: Path
    store: JsonlStore
    settings: Settings
    script: list[dict[str, Any]] = field(default_factory=list)
    window: int = 4000
    chunk_size: int = 0
    delay: float = 0.0

    def provider(self) -> Any:
        inner = ScriptedProvider(
            self.script, model="scripted", cache="deepseek", chunk_size=self.chunk_size
        )
        return SlowProvider(inner, self.delay) if self.delay else inner

    def registry(self, runtime: Any = None) -> SessionRegistry:
        runtime = runtime or WebRuntime(
            self.settings, Route(self.provider(), "scripted", self.window)
        )
        return SessionRegistry(self.store, runtime, default_cwd=self.workspace)

    def app(self, runtime: Any = None) -> Any:
        return create_app(self.registry(runtime), token=TOKEN)

    def log_lines(self, session_id: str) -> list[bytes]:
        """The stored event lines as the codec reads them (without the store's CRC seals)."""
        lines = self.store.log_path(session_id).read_bytes().splitlines()[1:]
        return [unseal(line)[0] for line in lines]


def make_env(
    tmp_path: Path, *, approval: str = "auto", backend: str = "recallable", chunk_tokens: int = 4000
) -> WebEnv:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(NOTES + "\n")
    settings = Settings(
        compaction=CompactionSettings(
            backend=backend,  # type: ignore[arg-type]
            retain_tokens=20,
            chunk_tokens=chunk_tokens,
        ),
        tools=ToolSettings(approval=approval),  # type: ignore[arg-type]
    )
    return WebEnv(tmp_path, workspace, JsonlStore(tmp_path / "home"), settings)


READ_NOTES = [
    {
        "text": "Let me read the notes.",
        "reasoning": "The user wants the file.",
        "toolCalls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
    },
    {"text": "The file has **60** lines.\n\n```python\nprint('fox')\n```"},
]


@pytest.fixture
def env(tmp_path: Path) -> WebEnv:
    e = make_env(tmp_path)
    e.script = list(READ_NOTES)
    return e


@contextlib.contextmanager
def open_client(env: WebEnv, runtime: Any = None, **options: Any) -> Iterator[TestClient]:
    """A TestClient (with the token header) over a fresh app for ``env`` as it is now."""
    with TestClient(env.app(runtime), **options) as c:
        c.headers.update(AUTH)
        yield c


@pytest.fixture
def client(env: WebEnv) -> Iterator[TestClient]:
    with open_client(env) as c:
        yield c


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def wait_idle(client: TestClient, session_id: str, timeout: float = 10.0) -> dict[str, Any]:
    def idle() -> dict[str, Any] | None:
        info = client.get(f"/api/sessions/{session_id}").json()
        return info if info["running"] is None else None

    return wait_until(idle, timeout, f"session {session_id} to be idle")  # type: ignore[no-any-return]


def new_session(client: TestClient) -> str:
    response = client.post("/api/sessions", json={})
    assert response.status_code == 201, response.text
    return response.json()["session"]["id"]  # type: ignore[no-any-return]


def error_of(response: Any) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return response.status_code, body["error"]["code"]


# ---- browser --------------------------------------------------------------------------------


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One chromium for the browser tests, closed when ``tests/web`` is done: Playwright's sync
    API keeps an event loop running on the main thread while it is open, and a later test
    calling ``asyncio.run`` would fail ("cannot be called from a running event loop")."""
    if not CHROMIUM.exists():
        pytest.skip(
            "browser tests need Debian's chromium at /usr/bin/chromium (apt-get install chromium)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield instance
        instance.close()
