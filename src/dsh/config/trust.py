"""Trusted workspaces: whose ``./.dsh/config.toml`` may loosen safety, pinned to its content.

``dsh trust`` records the directory under ``[trust] directories`` in the user's own
``$DSH_HOME/config.toml``, and the SHA-256 of the directory's ``.dsh/config.toml`` as it is
then under ``[trust.digests]`` (``absent`` when there is none). The project config applies in
full only while the file still has that digest: changed since by anyone (the model through a
shell command, a ``git pull``, the user), it is untrusted again, with one warning naming the
file, until the user reviews it and runs ``dsh trust`` again. Only this file is pinned: a
project's prompt commands (``.dsh/commands/``) need no trust, since a command only writes a
prompt that goes through the approval policy like any other.

A directory an older dsh recorded, without a digest, is untrusted the same way (state
``unpinned``, one warning). Its trust was given to content nobody recorded, which may have
changed since by the very route the digest closes (a model allowed to write files rewrote
it); recording whatever is there now, on the first load, would pin exactly that content.
Re-trusting costs the user one command, after a look at the file.

dsh owns the ``[trust]`` table: :func:`set_trust` rewrites it (and ``[trust.digests]``) at the
end of the file and keeps every other byte of the user config. It reads and rewrites under the
config's update lock (``dsh.config.file_update``), so concurrent ``dsh trust`` commands all land.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from dsh.config.file_update import replace_file, update_lock
from dsh.config.private_dirs import make_private_directory
from dsh.config.reading import dsh_home, parse_toml, read_bytes, read_toml
from dsh.errors import ConfigError

PROJECT_CONFIG = Path(".dsh") / "config.toml"
"""A workspace's own config, relative to the workspace."""
ABSENT = "absent"
"""The digest recorded for a directory trusted while it had no ``.dsh/config.toml``."""

TrustState = Literal["trusted", "changed", "unpinned", "untrusted"]
"""``trusted``: recorded, and the file is as it was then. ``changed``: recorded, but the file
changed since. ``unpinned``: recorded by an older dsh, without a digest. ``untrusted``: not
recorded."""


def config_digest(content: bytes | None) -> str:
    """How a project config's content is recorded: ``sha256:<hex>``, or ``absent``."""
    if content is None:
        return ABSENT
    return "sha256:" + hashlib.sha256(content).hexdigest()


def project_digest(directory: Path) -> str:
    """The digest of ``directory``'s ``.dsh/config.toml`` as it is now."""
    path = directory / PROJECT_CONFIG
    return config_digest(read_bytes(path) if path.exists() else None)


def trust_records(environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """Each directory the user config trusts → the digest recorded for it (None: recorded by
    an older dsh, without one), in the order listed."""
    path = dsh_home(environ) / "config.toml"
    if not path.exists():
        return {}
    return records_of(read_toml(path).get("trust", {}), path)


def records_of(table: Any, origin: Path | str) -> dict[str, str | None]:
    """The trust records in a user config's ``[trust]`` table; ``ConfigError`` naming
    ``origin`` when it is malformed."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{origin}: [trust] must be a table")
    directories = table.get("directories", [])
    if not isinstance(directories, list) or not all(isinstance(d, str) for d in directories):
        raise ConfigError(f"{origin}: trust.directories must be a list of strings")
    digests = table.get("digests", {})
    if not isinstance(digests, Mapping) or not all(isinstance(d, str) for d in digests.values()):
        raise ConfigError(f"{origin}: trust.digests must be a table of strings")
    return {directory: digests.get(directory) for directory in directories}


def state_of(directory: Path, records: Mapping[str, str | None], digest: str) -> TrustState:
    """Whether ``directory``, whose project config has ``digest`` now, is trusted by
    ``records``."""
    name = str(directory.resolve())
    if name not in records:
        return "untrusted"
    recorded = records[name]
    if recorded is None:
        return "unpinned"
    return "trusted" if recorded == digest else "changed"


def trust_state(directory: Path, environ: Mapping[str, str] | None = None) -> TrustState:
    """Whether the user trusts ``directory``'s project config as it is now."""
    records = trust_records(environ)
    if str(directory.resolve()) not in records:
        return "untrusted"
    return state_of(directory, records, _digest_now(directory))


def stale_trust_warning(state: TrustState, project_path: Path, workspace: Path) -> str | None:
    """The one warning line for a trusted directory whose trust no longer holds (None: it
    holds, or was never given)."""
    if state == "changed":
        why = f"changed since you trusted {workspace}"
    elif state == "unpinned":
        why = f"{workspace} was trusted by an older dsh, which did not record this file's content"
    else:
        return None
    return (
        f"{project_path}: {why}, so it is untrusted again (its safety settings are ignored); "
        "review the file, then run `dsh trust` in that directory again"
    )


def is_trusted(directory: Path, environ: Mapping[str, str] | None = None) -> bool:
    """True if the user trusted ``directory`` and its project config has not changed since."""
    return trust_state(directory, environ) == "trusted"


def trusted_directories(environ: Mapping[str, str] | None = None) -> list[str]:
    """The directories whose trust holds now (recorded, and their project config unchanged)."""
    records = trust_records(environ)
    return [d for d in records if state_of(Path(d), records, _digest_now(Path(d))) == "trusted"]


def _digest_now(directory: Path) -> str:
    """A directory's project config digest now; a file that cannot be read (a directory in
    its place, no permission) matches no record: not trusted, and loading it fails anyway."""
    try:
        return project_digest(directory)
    except (ConfigError, OSError):
        return "unreadable"


def set_trust(directory: Path, trusted: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Trust ``directory`` as its project config is now (recording its digest), or stop
    trusting it; True if the record changed (a re-trust after a change, or of an older dsh's
    record, changes it).

    The rest of the user config is kept byte for byte: only the ``[trust]`` tables are
    rewritten (moved to the end of the file; dsh owns them).
    """
    name = str(directory.resolve())
    digest = project_digest(directory) if trusted else None

    def change(current: dict[str, str | None]) -> dict[str, str | None]:
        wanted = dict(current)
        if digest is not None:
            wanted[name] = digest
        else:
            wanted.pop(name, None)
        return wanted

    return _update_records(change, environ)


def forget_trust(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Remove the trust record of the directory recorded as ``name``, as written (a directory
    deleted since, or moved: nothing is looked up on disk); True if there was one."""
    return _update_records(
        lambda current: {d: digest for d, digest in current.items() if d != name}, environ
    )


def _update_records(
    change: Callable[[dict[str, str | None]], dict[str, str | None]],
    environ: Mapping[str, str] | None,
) -> bool:
    """Apply ``change`` to the trust records on file; True if it changed them. The read, the
    change and the rewrite hold the user config's update lock (``dsh.config.file_update``),
    so two ``dsh trust`` commands at once both land: neither rewrites the records the other
    read before its change."""
    current = trust_records(environ)
    if change(current) == current:  # nothing to do (as of a whole file: no lock needed)
        return False
    path = dsh_home(environ) / "config.toml"
    make_private_directory(path.parent)
    with update_lock(path):
        current = trust_records(environ)  # again, under the lock
        return _write_records(current, change(current), path)


def _write_records(
    current: dict[str, str | None],
    wanted: dict[str, str | None],
    path: Path,
) -> bool:
    """Rewrite the ``[trust]`` tables of the user config at ``path`` with ``wanted`` (False,
    nothing written: no change); the caller holds its update lock."""
    if wanted == current:
        return False
    text = read_bytes(path).decode("utf-8") if path.is_file() else ""  # read_toml checked it
    kept = _without_trust(text).rstrip("\n")
    listed = sorted(wanted)
    table = "[trust]\ndirectories = [\n" + "".join(f"    {_string(d)},\n" for d in listed) + "]\n"
    pinned = [d for d in listed if wanted[d] is not None]
    if pinned:
        table += "\n[trust.digests]\n" + "".join(
            f"{_string(d)} = {_string(wanted[d] or '')}\n" for d in pinned
        )
    new_text = (kept + "\n\n" if kept else "") + table
    parse_toml(new_text, path)  # never write a file that would not load
    _replace_keeping_mode(path, new_text)
    return True


def _replace_keeping_mode(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` whole (``dsh.config.file_update.replace_file``), keeping
    the old file's permissions — a config holding ``provider.api_key`` is often readable by its
    owner alone — and owner-only for a new file."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o600
    replace_file(path, text.encode("utf-8"), mode)


def _string(value: str) -> str:
    """``value`` as a TOML basic string: JSON's escapes, which TOML shares, with every other
    character as it is (a ``\\uD83D`` pair would not be TOML) and DEL escaped too."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigError(f"cannot record {value!r} in the user config: not UTF-8") from exc
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _without_trust(text: str) -> str:
    """``text`` without the ``[trust]`` and ``[trust.*]`` tables (their headers and the lines
    up to the next table header)."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("["):
            header = stripped.split("#", 1)[0].strip()
            inside = header == "[trust]" or header.startswith("[trust.")
        if not inside:
            out.append(line)
    return "".join(out)
