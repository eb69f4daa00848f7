"""Run by ``test_warnings.py`` as ``python warnings_probe.py TMP REPORT``: the ``dsh`` console
script's stderr printer, then the real app (``run``, headless: it draws nothing on fd 2) with
a warning from another thread while it runs and one while it closes, and warnings before and
after. Writes to REPORT what the app showed and the size of fd 2 (a file) before and during
the run."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

from textual import events, on

from dsh.cli.main import ConsoleScript
from dsh.tui import DshApp
from tests.tui.conftest import Rig, settle

log = logging.getLogger("dsh.tools.mcp")


class WarnsWhileClosing(DshApp):
    @on(events.Unmount)
    def _warn(self) -> None:
        log.warning("while the app closes")


def main(root: Path, report: Path) -> None:
    ConsoleScript().start()
    log.warning("before the app starts")
    app = WarnsWhileClosing(Rig(root).app([]).controller.options)
    seen: dict[str, Any] = {}

    async def pilot_body(pilot: Any) -> None:
        await settle(pilot, lambda: app.ready)
        seen["stderr_before"] = os.fstat(2).st_size
        thread = threading.Thread(
            target=lambda: log.warning("from the MCP thread while the app runs")
        )
        thread.start()
        thread.join()
        await settle(pilot, lambda: bool(app.warnings.entries))
        seen["shown"] = [entry.toast() for entry in app.warnings.entries]
        seen["stderr_while_running"] = os.fstat(2).st_size
        app.exit()

    app.run(headless=True, auto_pilot=pilot_body)
    log.warning("after the app exited")
    report.write_text(json.dumps(seen))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
