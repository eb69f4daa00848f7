"""An undo killed mid-way (SIGKILL, in a child process) and the session then resumed in
``dsh web`` without undoing: the resume puts back what that undo left aside and removes its
files (``dsh.agent.undo_recovery``, run by ``Session.open``) before the page can prompt, and its
pages are warned once, in one line; a second resume finds nothing to say."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from dsh.config import Settings
from tests.agent.conftest import Harness
from tests.agent.test_undo_kill import HEAD, USER_FILES, changed_turn, killed_undo, listing
from tests.web.builders import run_apart
from tests.web.conftest import WebEnv


def test_resuming_a_session_whose_undo_was_killed_restores_its_files_and_warns_once(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    # in a thread: the browser tests' sync Playwright may own this thread's event loop
    with ThreadPoolExecutor(1) as pool:
        pool.submit(changed_turn, harness).result()
    tag = killed_undo(harness, "replace", 2)  # b.txt restored, new.txt aside, a.txt's restore
    env = WebEnv(tmp_path, harness.workspace, harness.store, Settings())
    registry = env.registry()
    sid = harness.session.id

    async def resumed() -> list[tuple[str, str, int]]:
        with registry.warnings.installed() as feed:
            feed.bind_loop()
            subscriber = registry.hub(sid).subscribe()
            handle = await registry.resume(sid)
            while True:
                message = await asyncio.wait_for(subscriber.queue.get(), 30)
                assert message is not None
                if '"kind":"warning"' in message:
                    break
            assert listing(harness.workspace) == {
                "a.txt": "A\n",
                "b.txt": "b\n",
                "new.txt": "made\n",
                **USER_FILES,
            }
            registry.close(handle.session.id)
            await registry.resume(sid)  # cleaned up already: nothing to say this time
            await registry.shutdown()
            return [(w["level"], w["text"], w["count"]) for w in registry.warnings.kept(sid)]

    warnings: Any = run_apart(resumed())
    assert warnings == [
        (
            "warning",
            f"{HEAD}cleaned up after it: removed .a.txt.dsh-undo-{tag}.new, put back new.txt; "
            "undo again to finish it (b.txt already as before the turn)",
            1,
        )
    ]
