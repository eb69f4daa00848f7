"""An adapter imports its SDK and makes its client on first use (``dsh.llm.sdk_client``): building
the provider (a face's start) imports no SDK; a call makes the client off the event loop; a
client that cannot be made fails every call alike (each trying again); ``warm`` makes it in a
background thread."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading

import pytest

from dsh.errors import ProviderError
from dsh.llm.errors import ErrorCode, provider_error
from dsh.llm.registry import make_provider
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.sdk_client import WARM_THREAD, LazyClient, warm

KEY = "sk-first-use-not-a-key"
PROBE = """
import json, sys
from dsh.llm.registry import make_provider
provider, _, _ = make_provider({name!r}, model="m", base_url={url!r}, api_key={key!r}, environ={{}})
built = {module!r} in sys.modules
client, _ = provider.sdk_client()
print(json.dumps([built, {module!r} in sys.modules, client.api_key == {key!r}]))
"""


@pytest.mark.parametrize(
    ("name", "url", "module"),
    [
        ("deepseek", None, "openai"),
        ("openai-compatible", "http://127.0.0.1:1/v1", "openai"),
        ("anthropic", None, "anthropic"),
    ],
)
def test_building_a_provider_imports_no_sdk_until_its_client_is_asked_for(name, url, module):
    probe = PROBE.format(name=name, url=url, key=KEY, module=module)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)

    imported_when_built, imported_when_asked, keyed = json.loads(done.stdout)
    assert (imported_when_built, imported_when_asked, keyed) == (False, True, True)


def test_a_call_makes_the_client_in_a_thread_of_its_own_and_once():
    made_in: list[str] = []

    def make() -> object:
        made_in.append(threading.current_thread().name)
        return object()

    lazy = LazyClient(make)
    assert repr(lazy) == "<LazyClient not made yet>" and not lazy.made

    async def twice() -> tuple[object, object]:
        return await lazy.when_made(), await lazy.when_made()

    first, second = asyncio.run(twice())

    assert first is second and lazy.made and repr(lazy) == "<LazyClient made>"
    assert len(made_in) == 1 and made_in[0] != threading.main_thread().name


def test_the_thread_a_call_waits_on_does_not_keep_a_quit_waiting():
    """A daemon thread: the interpreter's exit does not wait for an SDK import under way."""
    daemon: list[bool] = []

    def make() -> object:
        daemon.append(threading.current_thread().daemon)
        return object()

    asyncio.run(LazyClient(make).when_made())

    assert daemon == [True]


def test_a_client_that_could_not_be_made_fails_every_ask_each_trying_again():
    """A base URL the SDK refuses fails every call alike; an import that failed in a thread
    (say, a deadlock the import system detected) is not kept for the calls after it."""
    calls: list[int] = []

    def make() -> object:
        calls.append(1)
        if len(calls) < 4:
            raise provider_error(ErrorCode.INVALID_URL, "base URL refused by the SDK")
        return "client"

    lazy = LazyClient(make)
    for _ in range(2):
        with pytest.raises(ProviderError, match="refused by the SDK"):
            lazy.get()
    with pytest.raises(ProviderError, match="refused by the SDK"):
        asyncio.run(lazy.when_made())
    assert len(calls) == 3 and not lazy.made

    assert lazy.get() == "client" and lazy.get() == "client"
    assert len(calls) == 4 and lazy.made


def test_two_threads_asking_at_once_get_one_client():
    entered, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def make() -> object:
        calls.append(1)
        entered.set()
        release.wait()
        return object()

    lazy = LazyClient(make)
    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(lazy.get()))
    first.start()
    entered.wait()  # the first ask is making it
    second = threading.Thread(target=lambda: got.append(lazy.get()))
    second.start()
    release.set()
    first.join()
    second.join()

    assert calls == [1] and len(got) == 2 and got[0] is got[1]


def test_warm_makes_an_adapters_client_in_a_background_thread():
    provider, _, _ = make_provider("deepseek", model="m", base_url=None, api_key=KEY, environ={})
    lazy = provider._sdk  # type: ignore[attr-defined]
    assert not lazy.made

    thread = warm(provider)

    assert thread is not None and thread.name == WARM_THREAD and thread.daemon
    thread.join()
    assert lazy.made and provider.sdk_client()[0].api_key == KEY  # type: ignore[attr-defined]


def test_warm_leaves_a_provider_without_an_sdk_alone():
    assert warm(ScriptedProvider([{"text": "hi"}], model="scripted")) is None
