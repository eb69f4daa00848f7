"""The signals that ask a running dsh to stop as Ctrl-C does, for every face.

``timeout 600 dsh run …``, a CI job's cancel, a container stop or a ``kill`` send SIGTERM; a
closed terminal sends SIGHUP. Their default action kills the process mid-turn (the text a model
had streamed is never logged and the turn stays open), so each face stops on them as on Ctrl-C
and exits with 128 + the signal: ``dsh run`` and ``dsh compact`` turn them into SIGINT
(``dsh.cli.termination``), the terminal UI quits as on ctrl+q (``dsh.tui.app``), and ``dsh web``
shuts its server down gracefully on them and on SIGINT (``dsh.web.server``).

A turn such a signal cancelled ends with the signal named (``cancelled_by``), not as one the
user cancelled.

Here, below every face, so that all of them name one list and ``dsh run`` imports no face's
dependencies (Textual, uvicorn) to read it."""

from __future__ import annotations

import signal

from dsh.agent.cancel import CANCELLED_BY_USER

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""The signals, besides Ctrl-C's SIGINT, that stop a dsh process cleanly."""

_WHY = {
    signal.SIGTERM: "dsh was told to terminate: a timeout, a cancelled CI job, a kill",
    signal.SIGHUP: "dsh's terminal was closed",
}


def cancelled_by(signum: int) -> str:
    """Why a turn that the signal ``signum`` cancelled stopped, as its ``turn/end`` says:
    ``cancelled by the user`` for Ctrl-C's SIGINT, else the signal by name, with what sends it
    (``cancelled by SIGTERM (dsh was told to terminate: …)``)."""
    if signum == signal.SIGINT:
        return CANCELLED_BY_USER
    try:
        stop = signal.Signals(signum)
    except ValueError:
        return f"cancelled by signal {signum}"
    why = _WHY.get(stop)
    return f"cancelled by {stop.name} ({why})" if why else f"cancelled by {stop.name}"
