"""An adapter's SDK client, made on first use and off the event loop.

Importing a provider's SDK costs more CPU than all the rest of the terminal UI's start to its
first frame (0.4 s with bytecode cached, 1.1 s without): ``openai`` (pydantic, httpx2) about
0.6 s and 1.1 s, ``anthropic`` about 1.2 s and 2.2 s (``benchmarks/tui_startup.py``). So an
adapter is built when a face resolves its route (a missing key, an unknown provider, a base URL
no request can go to are said then, as before) but imports its SDK and makes its client only
when something needs it:

* a call (``LazyClient.when_made``) makes it in a thread of its own, so the event loop (the
  terminal UI's screen, the web server) keeps running meanwhile;
* ``warm`` makes it in a background thread now: the terminal UI calls it once its first frame
  is drawn, so the first prompt seldom waits for it.

What the client is made from (the API key among it) stays in the function that makes it until
then, and is dropped once the client is made: the key is kept by the client, or by that
function, and nowhere else. ``repr`` of a ``LazyClient`` says only whether it is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from functools import partial
from typing import Generic, Protocol, TypeVar, runtime_checkable

Made = TypeVar("Made")

WARM_THREAD = "dsh-warm-sdk-client"
"""The name of ``warm``'s thread (a benchmark waits for it)."""


class LazyClient(Generic[Made]):
    """What ``make`` returns, made once, by whichever thread asks first (others wait for it).
    When ``make`` raises, the ask raises it and the next ask tries again: a base URL the SDK
    refuses fails every call alike, and an import a thread could not finish is not kept."""

    def __init__(self, make: Callable[[], Made]) -> None:
        self._make: Callable[[], Made] | None = make
        self._lock = threading.Lock()
        self._made: Made | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {'made' if self.made else 'not made yet'}>"

    @property
    def made(self) -> bool:
        """Whether the client is made: asking for it now waits for nothing."""
        return self._make is None

    def get(self) -> Made:
        """The client, made now if it is not yet (this thread waits for the import)."""
        with self._lock:
            if self._make is not None:
                self._made = self._make()
                self._make = None  # the key goes with the function once the client holds it
        assert self._made is not None
        return self._made

    async def when_made(self) -> Made:
        """``get`` for a coroutine: made in a thread when it is not yet, the loop running on."""
        if self.made:
            return self.get()
        return await in_a_thread(self.get, name="dsh-sdk-client")


async def in_a_thread(work: Callable[[], Made], *, name: str) -> Made:
    """What ``work()`` returns (or raises), run in a daemon thread: a quit while it runs does
    not wait for it, as ``asyncio.to_thread``'s executor would at the loop's close."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Made] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not done.done():  # else the awaiting task was cancelled meanwhile
            outcome()

    def run() -> None:
        try:
            result = work()
        except BaseException as exc:
            outcome = partial(done.set_exception, exc)
        else:
            outcome = partial(done.set_result, result)
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await done


class ClientOnFirstUse(Generic[Made]):
    """What an adapter whose SDK client waits for its first use shares: ``_sdk``, the client
    made on first use (None when the base URL takes no request), set by its constructor."""

    _sdk: LazyClient[Made] | None = None

    def sdk_client(self) -> Made | None:
        """The SDK client and each request's extra headers, made now if they are not yet;
        None when the base URL takes no request. Raises the ``ProviderError`` of a URL the
        SDK's own parser refuses."""
        return None if self._sdk is None else self._sdk.get()

    def make_client(self) -> None:
        """Import the SDK and make the client now (``warm``); a client that cannot be made
        fails the calls instead, each trying again."""
        with contextlib.suppress(Exception):
            self.sdk_client()


@runtime_checkable
class MakesClientOnFirstUse(Protocol):
    """An adapter whose SDK client waits for its first use."""

    def make_client(self) -> None:
        """Make the client now if it is not yet (any thread may call this; it never raises:
        a client that could not be made fails the calls instead, each trying again)."""


def warm(provider: object) -> threading.Thread | None:
    """Make ``provider``'s SDK client in a background (daemon) thread, if it makes one on first
    use (one made already ends the thread at once); the thread started, or None."""
    if not isinstance(provider, MakesClientOnFirstUse):
        return None
    thread = threading.Thread(target=provider.make_client, name=WARM_THREAD, daemon=True)
    thread.start()
    return thread
