"""What every command needs: settings, the store, session lookup, one-line errors."""

from __future__ import annotations

import re
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dsh.cli.warning_lines import line_text, told, warning_line
from dsh.config import Settings, dsh_home, load_settings
from dsh.errors import (
    AmbiguousSessionError,
    ConfigError,
    DshError,
    HeaderCorruptError,
    LogCorruptError,
    SessionNotFoundError,
    UnknownEventTypeError,
    UsageError,
    error_line,
    printable_line,
)
from dsh.events import SessionWorkspace
from dsh.store import EventStore, UnreadableSession, open_store, resolve_session_id
from dsh.surface import Session

if TYPE_CHECKING:
    from dsh.agent.runtime import Route
    from dsh.agent.session_settings import Change, Resolved
    from dsh.cli.options import RouteFlags

__all__ = [
    "DshGroup",
    "cwd",
    "error",
    "fail",
    "record_settings",
    "record_workspace",
    "replayed_session",
    "resolve_session_id",
    "session_settings",
    "session_workspace",
    "settings",
    "settings_source",
    "store",
    "warn",
]


class DshGroup(click.Group):
    """A click group whose commands report a DshError as one line (see ``fail``)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except DshError as exc:
            fail(exc)
            return None  # pragma: no cover - fail exits


def settings() -> Settings:
    return load_settings()


def store(cfg: Settings | None = None) -> EventStore:
    cfg = cfg or settings()
    return open_store(dsh_home(), cfg.store.backend)


ECHO_PIECE = 100
"""Blocks that :func:`echo_blocks` writes per ``click.echo`` at most."""
ECHO_CHARS = 1 << 20
"""Characters after which :func:`echo_blocks` writes a piece, however few its blocks."""


def echo_blocks(
    blocks: Iterable[str],
    separator: str,
    *,
    per_piece: int = ECHO_PIECE,
    piece_chars: int = ECHO_CHARS,
) -> None:
    """``click.echo(separator.join(blocks))``, written ``per_piece`` blocks (or about
    ``piece_chars`` characters) at a time: the same bytes, without building one string of a long
    output (then copied for its newline, scanned for colour codes and encoded whole; one
    non-ASCII character makes all of it wide). ``blocks`` may be a generator: it is consumed as
    the output is written, so a view of a session of large tool results holds one piece of its
    text at a time, never all of it (``benchmarks/large_results_cli.py``).

    A piece ends with a separator, which holds a newline, and a colour code never spans a
    newline: stripping codes piece by piece (when the output is not a terminal) strips what
    stripping the whole would. A piece without an escape character has no code to strip, and
    is written as it is."""
    assert "\n" in separator
    pieces = _pieces(blocks, per_piece, piece_chars)
    piece = next(pieces, [])
    while True:
        following = next(pieces, None)  # one piece ahead: the last one ends without a separator
        text = separator.join(piece)
        if following is not None:
            text += separator
        click.echo(text, nl=following is None, color=True if "\x1b" not in text else None)
        if following is None:
            return
        piece = following


def _pieces(blocks: Iterable[str], per_piece: int, piece_chars: int) -> Iterator[list[str]]:
    held: list[str] = []
    size = 0
    for block in blocks:
        held.append(block)
        size += len(block)
        if len(held) >= per_piece or size >= piece_chars:
            yield held
            held, size = [], 0
    if held:
        yield held


def warn(message: str) -> None:
    """Print a command's own warning on stderr, as ``warning_line`` makes every warning line
    (and tell the taps of it: ``dsh.cli.warning_lines.tapped``)."""
    click.echo(warning_line(message), err=True)
    told("warning", line_text(message))


def error(message: str) -> None:
    """Report a failure that does not end the command by itself (a failed turn); an error's
    text in ``message`` is already as ``error_line`` makes it (``dsh run``'s ``_why``)."""
    text = printable_line(message)
    click.echo(f"dsh: error: {text}", err=True)
    told("error", text)


_LOG_ID = re.compile(
    r"[/\\]sessions[/\\](?P<jsonl>[^/\\]+)[/\\]session\.jsonl|\bsession (?P<sqlite>[\w-]+):"
)
"""The session id a corrupt-log error names: in a JSONL log's path, or SQLite's "session ID:"."""


class Unrepaired(LogCorruptError):
    """What ``dsh sessions repair`` itself could not salvage: no hint to run it again."""


def fail(exc: DshError) -> None:
    """Print one line and exit: 2 for usage and configuration errors (a missing API key
    included), 1 for runtime failures and for a session id that names no single session
    (unknown or ambiguous: the same code). The message is ``error_line``'s line (a message may
    quote what it was given: a config key, a file's text)."""
    message = error_line(str(exc))
    no_repair = UnknownEventTypeError | HeaderCorruptError | Unrepaired  # it would not help
    if isinstance(exc, LogCorruptError) and not isinstance(exc, no_repair):
        found = _LOG_ID.search(str(exc))
        session = (found.group("jsonl") or found.group("sqlite")) if found else "ID"
        message += f" (try `dsh sessions repair {session}`)"
    click.echo(f"dsh: error: {message}", err=True)
    if isinstance(exc, AmbiguousSessionError):
        sys.exit(1)
    sys.exit(2 if isinstance(exc, UsageError | ConfigError) else 1)


def cwd() -> Path:
    return Path.cwd()


def last_used_session_id(store_: EventStore, cwd: str, *, verb: str = "continue") -> str:
    """The session started in ``cwd`` that was used last (its latest event; the newest created
    first among equals): what ``--continue`` opens, ``dsh --resume`` opens without a terminal
    and ``dsh undo`` takes by default. ``SessionNotFoundError`` when there is none."""
    from dsh.transcript.listing import session_summaries  # through the summary cache

    headers = [h for h in store_.list() if h.cwd == cwd]
    if not headers:
        raise SessionNotFoundError(f"no session to {verb} in {cwd} (see `dsh sessions list --all`)")
    summaries = session_summaries(store_, headers)
    return max(summaries, key=lambda s: (s.updated_at, s.created_at, s.id)).id


def session_workspace(store_: EventStore, session_id: str | None, override: Path | None) -> Path:
    """Where tools run: ``--cwd`` if given, else a resumed session's own recorded workspace
    (which must still exist), else the current directory."""
    if override is not None:
        return override.resolve()
    if session_id is None:
        return cwd().resolve()
    header = store_.header_of(session_id)  # that session's header alone, not every session's
    if isinstance(header, UnreadableSession):
        raise unreadable_error(header)
    if header is None:
        raise SessionNotFoundError(f"no session {session_id!r} (see `dsh sessions list --all`)")
    recorded = Path(header.cwd)
    if not recorded.is_dir():
        raise UsageError(
            f"session {session_id} ran in {recorded}, which is no longer a directory; "
            "pass --cwd DIR to run its tools elsewhere"
        )
    return recorded


def unreadable_error(bad: UnreadableSession) -> LogCorruptError:
    """Why the session ``bad`` names cannot be read (its header, its file), as ``dsh sessions
    list`` and ``show`` say it, not "no session"."""
    reason = bad.reason if bad.id in bad.reason else f"session {bad.id}: {bad.reason}"
    return (LogCorruptError if bad.repairable else Unrepaired)(reason, line=bad.line)


def record_workspace(session: Session, workspace: Path) -> None:
    """Log a ``session/workspace`` event when tools will run outside the recorded workspace."""
    recorded = session.header.cwd
    if str(workspace) != recorded:
        session.append(SessionWorkspace(cwd=str(workspace), recorded=recorded))
        warn(f"session {session.id} ran in {recorded}; its tools now run in {workspace} (--cwd)")


def session_settings(
    store_: EventStore,
    session_id: str | None,
    settings_: Settings,
    overrides: Mapping[str, Mapping[str, Any]],
    *,
    switch: bool,
    checkpoints: bool = False,
    say_replaced: bool = True,
) -> Resolved:
    """``settings_`` with the session's recorded settings back where no flag overrides them
    (``Resolved.settings``); what the flags change (``Resolved.changes``) is said by
    ``record_settings`` when it logs them, not here: a prompt refused before anything is logged
    changes nothing. A recorded value no longer valid is replaced by the configured one, said
    as a warning unless ``say_replaced`` is False (the terminal UI says it itself, once it
    shows)."""
    from dsh.agent import session_settings as recorded_settings

    resolved = recorded_settings.effective(
        settings_,
        recorded_settings.read(store_, session_id),
        overrides,
        switch=switch,
        checkpoints=checkpoints,
        session_id=session_id if say_replaced else None,
    )
    url_flag = overrides.get("compaction", {}).get("summarizer_base_url")
    if url_flag is not None and resolved.settings.compaction.summarizer == "extractive":
        whose = "the configured one" if session_id is None else f"session {session_id}'s"
        raise UsageError(
            f"--summarizer-base-url is for a model summariser; {whose} is extractive, which "
            "calls no model: name the model with --summarizer MODEL"
        )
    return resolved


def record_settings(
    session: Session,
    settings_: Settings,
    route: Route,
    workspace: Path,
    changes: Sequence[Change] = (),
    said: Collection[str] = (),
) -> None:
    """Log the settings the session runs with, when they are new or changed, saying the
    ``changes`` the flags make to its recorded ones, and what changes with them (but the keys
    ``said`` by another line), on stderr as it logs them."""
    from dsh.agent.session_runner import record_settings as record

    record(session, settings_, route, str(workspace), changes=changes, said=said, warn=warn)


def replayed_session(store_: EventStore, flags: RouteFlags) -> str | None:
    """The session ``--replay`` names (a unique prefix works, as for ``--session``), or None
    without the flag; one that names no single session is a one-line error."""
    if flags.replay is None:
        return None
    return resolve_session_id(store_, flags.replay)


def settings_source(resumed: str | None, replayed: str | None) -> str | None:
    """Whose recorded settings a face's session starts from (``session_settings``): a resumed
    session's own; a new session replaying a recorded one (``--replay``) that one's, so it runs
    as the recording ran (its window, budgets and summariser), the flags still over them."""
    return resumed if resumed is not None else replayed
