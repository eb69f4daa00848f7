"""Files derived from a session's log and kept under the dsh home, outside the log itself.

Recall keeps each session's lower-cased checkpoint spans in ``<home>/cache/recall/<id>.spans``
(see ``dsh.recall.span_file``) and their word indexes beside them in ``<id>.words``
(``dsh.recall.word_file``). Such a file stays true because the log is append-only; cutting a
log (``dsh sessions repair``) is the one change that can make it stale, so repair drops it.

The recallable backend keeps each session's anchor index (how many messages name each literal)
in ``<home>/cache/anchors/<id>.anchors`` (see ``dsh.compaction.anchor_file``), so the first pass
of a resumed session reads it instead of scanning the whole log. It names the last event it
covers and checks that event against the log, so a cut log is caught anyway; repair drops it too.

The JSONL store keeps where each session's last ``session/settings`` line is in
``<home>/cache/settings/<id>.settings`` (see ``dsh.store.settings_record``), with the part of the
log it covers, which it checks against the log before it is believed; repair drops it too.

The session lists keep every session's summary figures in one file per store,
``<home>/cache/session-summaries-<backend>.json`` (see ``dsh.transcript.summary_cache``), each
with the position it covers; a log that changed other than by appends is told apart there
(``dsh.store.appended``), so repair need not drop anything from it.

While a model call of a session streams, the process running it keeps what has streamed so far in
``<home>/cache/live/<id>.live`` (see ``dsh.agent.live_text``), so a ``dsh web`` in another
process can show the reply as it comes; the file is made anew for each call and removed when
its reply is logged. It is not derived from the log (the log never holds the deltas) and no
reader believes one whose call the log has ended or whose writer is gone, so ``dsh sessions
repair`` leaves it. Its writer killed mid-call, the file is what is left of the reply: opening
the session for writing (its lock held, so no writer is left) logs it as the call's interrupted
reply before the crash repair closes the turn, then removes it (``dsh.store.live_file``,
``dsh.store.repair``); a file that names no call of the session is left for the next call's
writer to replace.
"""

from __future__ import annotations

import contextlib
from pathlib import Path


def span_cache_dir(home: Path) -> Path:
    """Where the sessions' span files live."""
    return Path(home) / "cache" / "recall"


def span_cache_path(home: Path, session_id: str) -> Path:
    """The span file of ``session_id``."""
    return span_cache_dir(home) / f"{session_id}.spans"


def word_cache_path(home: Path, session_id: str) -> Path:
    """The word index file of ``session_id`` (beside its span file)."""
    return span_cache_dir(home) / f"{session_id}.words"


def anchor_cache_dir(home: Path) -> Path:
    """Where the sessions' anchor index files live."""
    return Path(home) / "cache" / "anchors"


def anchor_cache_path(home: Path, session_id: str) -> Path:
    """The anchor index file of ``session_id``."""
    return anchor_cache_dir(home) / f"{session_id}.anchors"


def settings_record_path(home: Path, session_id: str) -> Path:
    """The JSONL settings record of ``session_id`` (``dsh.store.settings_record``)."""
    return Path(home) / "cache" / "settings" / f"{session_id}.settings"


def summary_cache_path(home: Path, backend: str) -> Path:
    """The session summary cache of the ``backend`` store (``jsonl`` or ``sqlite``)."""
    return Path(home) / "cache" / f"session-summaries-{backend}.json"


def import_dir(home: Path, session_id: str) -> Path:
    """Where ``dsh sessions import`` keeps the original log of the session it made as
    ``session_id`` (``dsh.interop.importer``); no other session is ever given that id."""
    return Path(home) / "imports" / session_id


def live_text_path(home: Path, session_id: str) -> Path:
    """The streamed text of ``session_id``'s running model call (``dsh.agent.live_text``)."""
    return Path(home) / "cache" / "live" / f"{session_id}.live"


def drop_derived(home: Path, session_id: str) -> list[Path]:
    """Delete the files derived from ``session_id``'s log; the paths that were deleted."""
    dropped = []
    derived = (span_cache_path, word_cache_path, anchor_cache_path, settings_record_path)
    for path in (where(home, session_id) for where in derived):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            dropped.append(path)
    return dropped
