"""What the terminal UI leaves unimported until after its first frame (``benchmarks/tui_startup.py``
measures what that saves): the provider's SDK, made in a background thread once the session is
on screen; Rich's Markdown, its parser and Pygments, until a Markdown reply is laid out; YAML,
until a prompt command file (or a script) needs reading; ``email`` until a Retry-After date is
read; ``textual.pilot`` but for tests. Each run is a fresh interpreter: the test process itself
has imported all of them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

IMPORT_PROBE = (
    "import json, sys\nimport dsh.cli.tui, dsh.tui.app\nprint(json.dumps(sorted(sys.modules)))"
)
NOT_TO_START = [
    "openai",
    "anthropic",
    "markdown_it",
    "pygments",
    "rich.markdown",
    "dsh.tui.markdown",
    "yaml",
    "email",
    "textual.pilot",
]


def test_importing_the_ui_loads_none_of_what_its_first_frame_does_without():
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True
    )

    loaded = set(json.loads(done.stdout))
    assert "dsh.tui.app" in loaded
    assert [name for name in NOT_TO_START if name in loaded] == []


PROBE = """
import asyncio, json, sys, threading
from pathlib import Path
from dsh.config import ProviderSettings, Settings
from dsh.llm.sdk_client import WARM_THREAD
from dsh.store import JsonlStore
from dsh.tui import DshApp, TuiOptions
from dsh.tui.controller import Controller
from dsh.tui.factories import settings_route_factory

SDK, LATER = {sdk!r}, ["markdown_it", "pygments", "rich.markdown", "dsh.tui.markdown", "yaml"]
root = Path({root!r})
settings = Settings(provider=ProviderSettings(name={provider!r}, api_key="dsh-test-not-a-key"))
seen = {{}}
warm_route = Controller.warm_route

def spied(self):
    seen["sdk imported before the warm-up"] = SDK in sys.modules
    warm_route(self)

Controller.warm_route = spied

async def main():
    options = TuiOptions(
        settings=settings,
        store=JsonlStore(root / "home"),
        workspace=root,
        route_factory=settings_route_factory(settings),
        cursor_blink=False,
    )
    app = DshApp(options)
    async with app.run_test(size=(100, 32)) as pilot:
        while not (app.ready and seen):
            await pilot.pause()
        seen["imported at ready"] = [name for name in LATER if name in sys.modules]
        seen["model shown"] = app.controller.model
        for thread in threading.enumerate():
            if thread.name == WARM_THREAD:
                thread.join()
        seen["sdk imported after the warm-up"] = SDK in sys.modules
        seen["client made"] = app.controller.route.provider._sdk.made

asyncio.run(main())
print(json.dumps(seen))
"""


@pytest.mark.parametrize(
    ("provider", "sdk", "model"),
    [("deepseek", "openai", "deepseek-chat"), ("anthropic", "anthropic", "claude-sonnet-5-5")],
)
def test_a_new_session_imports_its_sdk_only_after_its_first_frame(
    tmp_path: Path, provider: str, sdk: str, model: str
):
    probe = PROBE.format(sdk=sdk, root=str(tmp_path), provider=provider)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "sdk imported before the warm-up": False,
        "imported at ready": [],
        "model shown": model,
        "sdk imported after the warm-up": True,
        "client made": True,
    }
