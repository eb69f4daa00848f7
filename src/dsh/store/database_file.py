"""The SQLite store's database file itself, as opposed to the sessions in it: a path that is
there but is no file, and a file SQLite refuses as damaged, each said in one line that names the
file and what the person can do (``dsh sessions repair`` mends sessions inside a readable
database, never the file). Nothing here moves, deletes or rewrites the file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dsh.errors import StoreError


def database_exists(path: Path) -> bool:
    """Whether the session database file is there; a path that is there but is no file (a
    directory) is refused in one line, not taken for a store without sessions."""
    if path.is_file():
        return True
    if not path.exists():
        return False
    what = "a directory" if path.is_dir() else "not a regular file"
    raise StoreError(
        f"the session database {path} is {what}, not a database file: move it out of the way "
        "(dsh then creates the database there)"
    )


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite refused the database file itself as damaged (not a database, or a page
    that does not read), rather than e.g. locked or unopenable."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def damaged_database(path: Path, exc: BaseException) -> StoreError:
    """The one line for a database file SQLite refuses as damaged (``exc``, kept as the cause):
    where it is, that ``dsh sessions repair`` (which mends sessions inside a readable database)
    cannot mend it, and what can be done: move it aside (dsh then starts a new database), or put
    back the copy a repair made, when there is one. Nothing is moved or deleted for the person:
    the file is theirs to keep or recover."""
    try:
        copied = any(
            not copy.name.endswith(_NOT_A_COPY)
            for copy in path.parent.glob(f"{path.name}.before-repair-*")
        )
    except OSError:
        copied = False
    restore = (
        f", or put the newest {path.name}.before-repair-* copy (and its -wal) in its place"
        if copied
        else ""
    )
    return StoreError(
        f"the session database {path} is damaged; `dsh sessions repair` cannot mend it: move "
        f"it and its -wal and -shm files aside, and dsh starts a new one{restore}"
    )


_NOT_A_COPY = ("-wal", "-shm", "-journal")
"""What SQLite keeps beside a copy made by ``dsh sessions repair`` (its log, its index)."""
