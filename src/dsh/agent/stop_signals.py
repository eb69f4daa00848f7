"""The signals that ask a running dsh to stop as Ctrl-C does, for every face.

``timeout 600 dsh run …``, a CI job's cancel, a container stop or a ``kill`` send SIGTERM; a
closed terminal sends SIGHUP. Their default action kills the process mid-turn (the text a model
had streamed is never logged and the turn stays open), so each face stops on them as on Ctrl-C
and exits with 128 + the signal: ``dsh run`` and ``dsh compact`` turn them into SIGINT
(``dsh.cli.termination``), the terminal UI quits as on ctrl+q (``dsh.tui.app``), and ``dsh web``
shuts its server down gracefully on them and on SIGINT (``dsh.web.server``).

Here, below every face, so that all of them name one list and ``dsh run`` imports no face's
dependencies (Textual, uvicorn) to read it."""

from __future__ import annotations

import signal

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""The signals, besides Ctrl-C's SIGINT, that stop a dsh process cleanly."""
