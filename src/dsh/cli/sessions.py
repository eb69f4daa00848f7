"""``dsh sessions list|show|export|stats``: read stored sessions (never writes, never blocks);
``dsh sessions repair`` salvages a corrupt session after copying it aside (see
:mod:`dsh.store.salvage`, :mod:`dsh.store.salvage_sqlite`);
``dsh sessions migrate`` moves sessions between the stores (see :mod:`dsh.store.migrate`)."""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import click

from dsh.cli import context
from dsh.cli.export_output import write_export
from dsh.cli.fork import fork
from dsh.config import dsh_home, trust_state, trusted_directories
from dsh.errors import DshError, LogCorruptError, StoreError, UsageError, error_line, printable_line
from dsh.events import SessionSettings, encode_event, event_type_of
from dsh.interop import import_upstream
from dsh.interop.upstream_write import upstream_lines
from dsh.store import EventStore, JsonlStore, SqliteStore
from dsh.store.base import SessionLog, UnreadableSession, encode_header
from dsh.store.migrate import migrate_sessions, store_location
from dsh.store.salvage import salvage_session
from dsh.store.salvage_sqlite import salvage_sqlite_session
from dsh.surface import Session, checkpoint_kind
from dsh.surface.projection import first_refused
from dsh.tools.terminal_text import printable_text, terminal_json
from dsh.transcript import TRANSCRIPT_SEPARATOR, render_message
from dsh.transcript.listing import session_summaries, without_path
from dsh.transcript.markdown import markdown_pieces
from dsh.transcript.stats import render_stats, session_stats
from dsh.transcript.text import iter_transcript_blocks
from dsh.transcript.titles import SessionSummary

PROJECT_CONFIG = ".dsh/config.toml"
"""A workspace's own config, whose settings count only once the workspace is trusted."""


@click.group("sessions")
def sessions() -> None:
    """List, show, export, import, fork, repair and move stored sessions."""


sessions.add_command(fork)  # dsh sessions fork: dsh.cli.fork


@sessions.command("list")
@click.option("--all", "show_all", is_flag=True, help="Every session, not only this directory's.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON array on stdout (id, created/updated times in ms, turns, title, workspace, "
    "trusted; an unreadable session: id, why in `unreadable`, `line`, `repairable`, and its "
    "creation time and workspace when its header reads), nothing else.",
)
def list_sessions(show_all: bool, as_json: bool) -> None:
    """List sessions started in the current directory (oldest first), with their titles."""
    here = str(context.cwd())
    shown_here = printable_line(here)  # a directory's name may hold a terminal escape
    store = context.store()
    # --all lists every session, which lets the summary cache forget the sessions that are gone
    headers = None if show_all else [h for h in store.list() if h.cwd == here]
    summaries = session_summaries(store, headers)
    trusted = set(trusted_directories())
    if as_json:
        records = _as_records(summaries, store.unreadable(), trusted, store)
        click.echo(json.dumps(records, indent=1))
        return
    unreadable = store.unreadable()
    if not summaries and not unreadable:
        scope = "" if show_all else f" in {shown_here} (use --all to list every session)"
        click.echo(f"no sessions{scope}")
    for summary in summaries:
        if summary.unreadable is not None:  # its log does not load: why, as a header's
            click.echo(_unreadable_row(summary.unreadable, store))
            continue
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.created_at / 1000))
        where = f"  {printable_line(summary.cwd)}" if show_all else ""
        trust = "  [trusted]" if summary.cwd in trusted else ""
        turns = f"{summary.turns} turn{'' if summary.turns == 1 else 's'}"
        click.echo(f"{summary.id}  {created}  {turns:>9}  {summary.title}{where}{trust}")
    for bad in unreadable:  # their workspace is unknown: listed everywhere
        click.echo(_unreadable_row(bad, store))
    _mention_the_other_store(store, here=None if show_all else here)
    if not show_all and (Path(here) / PROJECT_CONFIG).is_file():
        # only where a project config makes trust matter; on stderr, so stdout is the list
        state = {
            "trusted": "trusted",
            "changed": "changed since you trusted it, so not trusted (review it, then `dsh trust`)",
            "unpinned": "not trusted: an older dsh trusted it unpinned (review it, then "
            "`dsh trust`)",
        }.get(trust_state(Path(here)), "not trusted (see `dsh trust`)")
        click.echo(f"workspace {shown_here}: its {PROJECT_CONFIG} is {state}", err=True)


def _unreadable_row(bad: UnreadableSession, store: EventStore) -> str:
    """A listing's row of a session that does not load, whether its header or a later line
    (row) is at fault: ``ID  UNREADABLE: why``, and the repair to try when one can help."""
    hint = f"  (try `dsh sessions repair {bad.id}`)" if bad.repairable else ""
    return f"{bad.id}  UNREADABLE: {error_line(without_path(bad.reason, store, bad.id))}{hint}"


def _unreadable_record(bad: UnreadableSession, store: EventStore) -> dict[str, object]:
    reason = without_path(bad.reason, store, bad.id)
    return {"unreadable": reason, "line": bad.line, "repairable": bad.repairable}


def _as_records(
    summaries: list[SessionSummary],
    unreadable: list[UnreadableSession],
    trusted: set[str],
    store: EventStore,
) -> list[dict[str, object]]:
    """``dsh sessions list --json``: each listed session as a JSON object, titles as stored;
    one that does not load has no title or figures, only why (``unreadable``)."""
    records: list[dict[str, object]] = []
    for summary in summaries:
        if summary.unreadable is not None:
            known = {"id": summary.id, "createdAt": summary.created_at, "cwd": summary.cwd}
            known["trusted"] = summary.cwd in trusted
            records.append(known | _unreadable_record(summary.unreadable, store))
            continue
        record: dict[str, object] = {
            "id": summary.id,
            "createdAt": summary.created_at,
            "updatedAt": summary.updated_at,
            "turns": summary.turns,
            "title": summary.title,
            "cwd": summary.cwd,
            "trusted": summary.cwd in trusted,
        }
        records.append(record)
    for bad in unreadable:
        records.append({"id": bad.id} | _unreadable_record(bad, store))
    return records


def _mention_the_other_store(store: EventStore, *, here: str | None) -> None:
    """Sessions kept by the store that is not configured are not silently gone: say where."""
    current, other = (
        ("sqlite", JsonlStore(dsh_home()))
        if isinstance(store, SqliteStore)
        else ("jsonl", SqliteStore(dsh_home()))
    )
    name = "jsonl" if current == "sqlite" else "sqlite"
    try:
        count = sum(1 for h in other.list() if here is None or h.cwd == here)
        count += len(other.unreadable())
    except StoreError as exc:  # a store not in use does not stop the listing of the one in use
        context.warn(f"the {name} store, which is not in use, cannot be read: {exc}")
        return
    if count:
        click.echo(
            f"{count} more session(s) in the {name} store ({store_location(other)}): list them "
            f"with `DSH_STORE_BACKEND={name} dsh sessions list`, or move them here with "
            f"`dsh sessions migrate --to {current}`"
        )


VIEWS = ("transcript", "surface", "events", "settings")


@sessions.command("show")
@click.argument("session_id")
@click.option(
    "--view",
    type=click.Choice(VIEWS),
    default="transcript",
    show_default=True,
    help="transcript: what people see; surface: what the model sees next; events: the raw log; "
    "settings: the route, window, compaction and workspace the session runs with.",
)
def show(session_id: str, view: str) -> None:
    """Print one session."""
    # Each view is written a piece at a time as it is rendered (``echo_blocks``): a session of
    # large tool results never has all its text in memory at once, only its events.
    if view in ("transcript", "events"):  # the log's events alone: no surface fold needed
        with _open_log(session_id) as log:
            if view == "events" and log.events:
                # a base URL's secret an older dsh recorded shown masked, as it is recorded now
                from dsh.agent.settings_record import as_recorded_today

                lines = (
                    terminal_json(encode_event(as_recorded_today(event)).decode())
                    for event in log.events
                )
                context.echo_blocks(lines, "\n")
            elif view == "transcript":  # what a file or a reply held, never sent to act
                blocks = (printable_text(block) for block in iter_transcript_blocks(log.events))
                context.echo_blocks(blocks, TRANSCRIPT_SEPARATOR)
        return
    if view == "settings":
        from dsh.agent.settings_view import describe

        for line in describe(_recorded_settings(session_id)):
            click.echo(printable_text(line))
        return
    with _open(session_id) as session:
        blocks = (printable_text(block) for block in surface_blocks(session))
        context.echo_blocks(blocks, SURFACE_SEPARATOR)


def _recorded_settings(session_id: str) -> SessionSettings | None:
    """The settings the log last recorded, read as a resume reads them
    (``EventStore.latest_settings``: no load of the log, whatever its length); when that read
    fails (its settings line does not read), from the loaded log, which says what is wrong."""
    from dsh.agent.session_settings import latest

    store = context.store()
    resolved = context.resolve_session_id(store, session_id)
    try:
        event = store.latest_settings(resolved)
    except DshError:
        return latest(_open(resolved))
    return event.data if event is not None else None


@sessions.command("export")
@click.argument("session_id")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "jsonl", "upstream"]),
    default="md",
    show_default=True,
    help="md: the transcript people read; jsonl: the log's events; upstream: the TypeScript "
    "harness's format.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to this file instead of standard output.",
)
def export(session_id: str, fmt: str, output: str | None) -> None:
    """Export a session as Markdown (the human transcript, the default), JSONL (the log's
    header and events as canonical JSON, without the store's CRC seals) or upstream
    (the TypeScript harness's format; what it cannot express is listed on stderr)."""
    if output is not None:
        _refuse_store_path(Path(output))
    session = _open(session_id)
    notes: Counter[str] = Counter()
    pieces: Iterable[bytes]
    if fmt in ("upstream", "jsonl"):
        # a base URL's secret an older dsh recorded goes out masked, as it is recorded now
        from dsh.agent.settings_record import as_recorded_today

        events = [as_recorded_today(event) for event in session.events]  # the same objects
    if fmt == "upstream":
        pieces = upstream_lines(session.header, events, notes)
    elif fmt == "jsonl":
        header = [encode_header(session.header) + b"\n"]
        pieces = itertools.chain(header, (encode_event(e) + b"\n" for e in events))
    else:  # for people, to a terminal or a file alike: no escape a terminal would act on
        markdown = markdown_pieces(session.header, session.events)
        pieces = (printable_text(piece).encode() for piece in markdown)  # each ends a line
    write_export(pieces, output)  # as it is made: the export is never held whole
    for note, count in sorted(notes.items()):
        context.warn(f"not expressible upstream: {note} ×{count}")


def _refuse_store_path(output: Path) -> None:
    """An export written into the store (over a session's log, the database or its journal)
    would replace the session it reads with a copy the store cannot load: refused."""
    home = dsh_home()
    target = output.resolve()
    log_root = JsonlStore(home).root.resolve()
    database = SqliteStore(home).path.resolve()
    in_store = target.is_relative_to(log_root) or (
        target.parent == database.parent and target.name.startswith(database.name)
    )
    if in_store:
        raise UsageError(
            f"-o {output} is inside dsh's session store ({log_root} or {database}); "
            "write the export somewhere else"
        )


@sessions.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--id",
    "session_id",
    default=None,
    callback=lambda _ctx, _param, value: _checked_id(value),
    help="Id of the new session (default: new): a letter or digit, then letters, digits, '.', "
    "'_' and '-', at most 100.",
)
@click.option(
    "--cwd",
    "workspace",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Workspace the session's tools run in (default: the current directory, never the log's).",
)
def import_(file: Path, session_id: str | None, workspace: Path | None) -> None:
    """Import a TypeScript-harness session log, or a dsh log (`export --format jsonl`), as a
    new session (see docs/interop.md)."""
    where = (workspace or context.cwd()).resolve()
    result = import_upstream(
        context.store(), dsh_home(), file, cwd=str(where), session_id=session_id
    )
    click.echo(printable_text(result.report()))


def _checked_id(value: str | None) -> str | None:
    """``--id``: a name a session's directory can have, or a one-line refusal saying why (``.``
    and ``..`` are made of allowed characters, but name directories already)."""
    if value is None:
        return None
    if not value or len(value) > 100:
        why = "is empty" if not value else f"has {len(value)} characters, over 100"
    elif not value[0].isascii() or not value[0].isalnum():
        why = "must start with a letter or a digit"
    elif bad := next((c for c in value if not (c.isascii() and (c.isalnum() or c in "._-"))), ""):
        why = f"may hold only letters, digits, '.', '_' and '-', not {printable_line(repr(bad))}"
    else:
        return value
    raise click.BadParameter(f"{printable_line(repr(value))} {why}")


@sessions.command("stats")
@click.argument("session_id")
def stats(session_id: str) -> None:
    """Tokens, cache-hit ratio, steps, tool calls and compactions of one session."""
    with _open_log(session_id) as log:  # figures of the log's events: no surface fold needed
        click.echo(f"session {log.id}")
        click.echo(render_stats(session_stats(log.events)))


@sessions.command("repair")
@click.argument("session_id")
def repair(session_id: str) -> None:
    """Salvage a corrupt session: copy its log (JSONL) or database (SQLite) aside, keep the
    events that load, say exactly what was dropped."""
    store = context.store()
    resolved = context.resolve_session_id(store, session_id)
    try:
        if isinstance(store, JsonlStore):
            lines = salvage_session(store, resolved, validate=first_refused).lines()
        elif isinstance(store, SqliteStore):
            lines = salvage_sqlite_session(store, resolved, validate=first_refused).lines()
        else:
            raise UsageError("dsh sessions repair works on the jsonl and sqlite stores")
    except LogCorruptError as exc:  # beyond repair (its header): not "try repair" again
        raise context.Unrepaired(str(exc), line=exc.line, seq=exc.seq) from exc
    for line in lines:
        click.echo(line)


@sessions.command("migrate")
@click.option(
    "--to",
    "backend",
    type=click.Choice(["sqlite", "jsonl"]),
    required=True,
    help="The store to move the sessions into.",
)
def migrate(backend: str) -> None:
    """Move every session of the other store into the --to store: each copy is read back and
    compared event by event before its original is removed."""
    home = dsh_home()
    jsonl, sqlite = JsonlStore(home), SqliteStore(home)
    source, target = (jsonl, sqlite) if backend == "sqlite" else (sqlite, jsonl)
    report = migrate_sessions(source, target)
    for line in report.lines(store_location(source), store_location(target)):
        click.echo(line)
    if report.failed:
        raise SystemExit(1)


def _open_log(session_id: str) -> SessionLog:
    """The stored log, read-only (decoded, its seals and events checked, not folded into a
    surface: what the views that only read events need)."""
    store = context.store()
    log = store.open(context.resolve_session_id(store, session_id))
    for warning in log.warnings:
        context.warn(warning)
    return log


def _open(session_id: str) -> Session:
    store = context.store()
    session = Session.open(store, context.resolve_session_id(store, session_id))
    for warning in session.warnings:
        context.warn(warning)
    return session


SURFACE_SEPARATOR = "\n\n"


def surface_blocks(session: Session) -> Iterator[str]:
    """Each current node with its seq and op, in model order, marked as index stub, state or
    tail (the layout ``[stub…][state][tail]`` after a recallable pass): one block a node, made
    as it is written."""
    for seq in session.nodes:
        event = session.events[seq]
        op = "append" if getattr(event, "surface_op", None) == "append" else "replace"
        kind = checkpoint_kind(session, seq)
        role = {"index": "index stub", "state": "state"}.get(kind or "", "tail")
        message = session.node_message(seq)
        label = f"[{kind} checkpoint]" if kind is not None else None
        body = render_message(message, label=label) if message is not None else "(empty)"
        yield f"#{seq} {event_type_of(event)} ({op}) — {role}\n{body}"
