"""``dsh sessions import``: a TypeScript-harness log becomes a new dsh session, all or nothing.

Order of work, so a failure never leaves a partial session behind: read and convert the whole
file in memory (any problem refuses here, naming the line); copy the original, untouched, into a
staging directory; create the session with every converted event in one write; only then move
the staged copy to ``$DSH_HOME/imports/<session-id>/`` beside the report. If creating the session
fails, the staged copy is removed. The route a ``session/settings`` event records is dropped
(``dsh.interop.foreign_route``): the user's config alone chooses where their key is sent.

The file must be a regular file, looked at before it is opened (a FIFO would block the read
forever, a device never ends). A dsh log (version 1: an export, or a store's ``session.jsonl``)
imports the same way without conversion and keeps its own id when that id is free here; when a
session already has it, the import takes a fresh id and the report says so.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dsh.config.private_dirs import make_private_directory
from dsh.config.small_file import UnreadableFile, check_regular_file, read_regular_file
from dsh.errors import StoreError, UsageError, printable_line
from dsh.interop.foreign_route import drop_routes
from dsh.interop.upstream_read import Conversion, UpstreamFormatError, read_upstream
from dsh.store import EventStore, new_session_id
from dsh.store.derived import import_dir

ORIGINAL_NAME = "original.jsonl"
REPORT_NAME = "report.txt"
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass
class ImportResult:
    session_id: str
    cwd: str
    original: Path
    conversion: Conversion
    taken: bool = False
    """True when a dsh log's own id was taken here, so the session got a fresh one."""

    def report(self) -> str:
        """What the import converted, kept opaque and changed (also saved as report.txt). What
        the log names (its id, its workspace, a header field's name) is shown as
        ``printable_line`` shows text: one line, a terminal escape as its escape."""
        c = self.conversion
        what = "dsh session " if c.dsh_log else ""
        lines = [
            f"imported {what}{printable_line(c.header.id)} as session {self.session_id} "
            f"({len(c.events)} events from {c.lines} lines)",
            f"original copied to {self.original}",
            f"workspace: {printable_line(self.cwd)}" + self._ran_in(),
            "converted: " + _counts(c.converted),
            "kept as opaque ignorable events: " + (_counts(c.kept_opaque) or "none"),
        ]
        if self.taken:
            lines.insert(
                1,
                f"a session {printable_line(c.header.id)} exists already: "
                "given a new id (--id ID chooses one)",
            )
        for key, value in c.header.extras.items():
            lines.append(
                f"header field {printable_line(key)} = {value!r} has no dsh counterpart "
                "(kept in the copy)"
            )
        lines.extend(f"{note} ×{count}" for note, count in sorted(c.notes.items()))
        lines.extend(f"warning: {w}" for w in c.warnings)
        return "\n".join(lines)

    def _ran_in(self) -> str:
        recorded = self.conversion.header.cwd
        if recorded is None:
            return " (the log names none)"
        if recorded == self.cwd:
            return ""
        return f" (the log ran in {printable_line(recorded)}; --cwd DIR chooses another)"


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{kind} ×{count}" for kind, count in sorted(counter.items()))


def import_upstream(
    store: EventStore, home: Path, path: Path, *, cwd: str, session_id: str | None = None
) -> ImportResult:
    """Import one TypeScript-harness log as a session whose tools run in ``cwd`` (the user's
    choice: the log's own ``cwd`` is only reported); raises a one-line DshError and writes
    nothing if the log cannot be imported."""
    try:  # a regular file only: looked at first, so a FIFO or a device is never opened
        check_regular_file(path)
        data = read_regular_file(path)  # checks what it opened too (a path swapped since)
    except UnreadableFile as exc:
        raise UsageError(f"cannot import {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot import {path}: {exc.strerror or exc}") from None
    if data[:4] == b"\x28\xb5\x2f\xfd":
        raise UpstreamFormatError(f"{path}: zstd-compressed; decompress it first (zstd -d)")
    # An editor that saves UTF-8 "with signature" puts a byte-order mark first; the log is
    # read without it (the original is kept byte for byte beside the import).
    conversion = read_upstream(data.removeprefix(b"\xef\xbb\xbf"), name=str(path))
    # The user chose where its tools run (the import's directory or --cwd), not the log: a
    # continued session would otherwise work in whatever directory a foreign log names.
    workspace = cwd
    conversion.events, dropped = drop_routes(conversion.events, workspace)  # config routes it
    if dropped is not None:
        conversion.warnings.append(dropped)
    chosen, taken = session_id or new_session_id(conversion.header.created_at), False
    own = conversion.header.id
    if session_id is None and conversion.dsh_log and _SAFE_ID.fullmatch(own):
        taken = store.header_of(own) is not None or import_dir(home, own).exists()
        chosen = chosen if taken else own  # its own id, so `dsh run --session ID` still finds it
    if not _SAFE_ID.fullmatch(chosen):
        raise UsageError(f"--id {chosen!r}: use letters, digits, '.', '_' and '-' (≤ 100)")
    if store.header_of(chosen) is not None:  # that one session looked up, readable or not
        raise UsageError(f"a session {chosen} already exists; choose another --id")
    final = import_dir(home, chosen)
    if final.exists():
        raise UsageError(f"{final} already exists; choose another --id")
    make_private_directory(final.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{chosen}.", dir=final.parent))
    try:
        shutil.copyfile(path, staging / ORIGINAL_NAME)
        log = store.create(
            cwd=workspace,
            seed=conversion.events,
            session_id=chosen,
            created_at=conversion.header.created_at,
        )
    except (OSError, StoreError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, StoreError):
            raise
        raise StoreError(f"cannot copy {path}: {exc.strerror or exc}") from exc
    log.close()
    result = ImportResult(chosen, workspace, final / ORIGINAL_NAME, conversion, taken)
    (staging / REPORT_NAME).write_text(result.report() + "\n", encoding="utf-8")
    os.replace(staging, final)
    return result
