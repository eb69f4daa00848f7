"""Hook managers' configuration: the files outside ``.git`` whose commands a git hook, once a
manager installed it, runs on the user's next commit (:mod:`dsh.tools.protected` asks for every
write to them).

By name, anywhere in the workspace (``MANAGED_NAMES``; names as each manager documents them):

- lefthook: ``lefthook``, ``.lefthook``, ``lefthook-local`` and ``.lefthook-local`` with
  ``.yml``, ``.yaml``, ``.json``, ``.jsonc`` or ``.toml`` (also looked up under ``.config/``),
  and its script directories ``.lefthook/`` and ``.lefthook-local/``;
- husky v4 (before ``.husky/``): ``.huskyrc`` and ``.huskyrc.json``/``.yaml``/``.yml``/``.js``/
  ``.cjs``, ``husky.config.js``/``.cjs``;
- lint-staged (run by a pre-commit hook): ``.lintstagedrc`` and ``.lintstagedrc.json``/
  ``.yaml``/``.yml``/``.mjs``/``.mts``/``.js``/``.ts``/``.cjs``/``.cts``,
  ``lint-staged.config.mjs``/``.mts``/``.js``/``.ts``/``.cjs``/``.cts``, and ``package.yaml``/
  ``package.yml`` whole (lint-staged reads their ``lint-staged`` key; dsh does not read YAML to
  tell which key a write changes);
- simple-git-hooks: ``.simple-git-hooks`` and ``simple-git-hooks`` with ``.cjs``, ``.js``,
  ``.mjs`` or ``.json``;
- overcommit: ``.overcommit.yml`` and its plugin directory ``.git-hooks/``.

And a ``package.json`` anywhere, only when a write changes one of its hook keys
(``PACKAGE_KEYS``: ``husky``, ``lint-staged``, ``simple-git-hooks``), so that an ordinary
dependency edit is not asked every time (:func:`package_key_change`). The text the call would
leave is worked out as the tool works it out (``write_file``'s ``content``; ``edit_file``'s one
replacement in the file as it is now), and both texts are parsed as JSON, as Node parses them
(``NaN`` and the like refused, the last of a repeated key counting): a key added, removed, or
given another value (types, order and all) is a change. When either text is not a JSON object's
(a file being repaired, a write that breaks it, a file that cannot be read), nothing can be
compared, and the write is asked if a hook key is named anywhere in either text (``\\uXXXX``
escapes read as the characters they stand for), since fixing a broken file can bring a key to
life. A call that would write nothing (an ``edit_file`` whose ``old`` is not in the file once)
is not asked here: the tool's own refusal answers it. Writes are decided one at a time, right
before each runs (``dsh.agent.call_order``), so the file compared is the one the tool changes;
only something that could write it anyway (a command the user allowed) could change it between.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.config.small_file import UnreadableFile, read_regular_file
from dsh.errors import ToolError
from dsh.tools.files import check_edit_arguments, occurrence

LEFTHOOK = "lefthook"
HUSKY = "husky"
LINT_STAGED = "lint-staged"
SIMPLE_GIT_HOOKS = "simple-git-hooks"
OVERCOMMIT = "overcommit"

WHAT_MANAGERS_RUN: dict[str, str] = {
    LEFTHOOK: "lefthook's config, which runs commands on git commit",
    HUSKY: "husky's config, which runs commands on git commit",
    LINT_STAGED: "lint-staged's config, which runs commands on git commit",  # by a hook
    SIMPLE_GIT_HOOKS: "simple-git-hooks' config, which runs commands on git commit",
    OVERCOMMIT: "overcommit's config, which runs commands on git commit",
}
"""A manager → what a write to its configuration changes, as the approval prompt says it."""


def _named(manager: str, stems: tuple[str, ...], suffixes: tuple[str, ...]) -> dict[str, str]:
    return {stem + suffix: manager for stem in stems for suffix in suffixes}


_LINT_STAGED_SCRIPTS = (".mjs", ".mts", ".js", ".ts", ".cjs", ".cts")
_LINT_STAGED_RC = ("", ".json", ".yaml", ".yml", *_LINT_STAGED_SCRIPTS)
_SIMPLE_GIT_HOOKS = (".cjs", ".js", ".mjs", ".json")
MANAGED_NAMES: dict[str, str] = {
    **_named(
        LEFTHOOK,
        ("lefthook", ".lefthook", "lefthook-local", ".lefthook-local"),
        (".yml", ".yaml", ".json", ".jsonc", ".toml"),
    ),
    ".lefthook": LEFTHOOK,
    ".lefthook-local": LEFTHOOK,
    **_named(HUSKY, (".huskyrc",), ("", ".json", ".yaml", ".yml", ".js", ".cjs")),
    **_named(HUSKY, ("husky.config",), (".js", ".cjs")),
    **_named(LINT_STAGED, (".lintstagedrc",), _LINT_STAGED_RC),
    **_named(LINT_STAGED, ("lint-staged.config",), _LINT_STAGED_SCRIPTS),
    **_named(LINT_STAGED, ("package",), (".yaml", ".yml")),
    **_named(SIMPLE_GIT_HOOKS, (".simple-git-hooks", "simple-git-hooks"), _SIMPLE_GIT_HOOKS),
    ".overcommit.yml": OVERCOMMIT,
    ".git-hooks": OVERCOMMIT,
}  # fmt: skip
"""A file or directory of this name (lower case), anywhere in the workspace → whose hooks'
configuration it is."""

PACKAGE_JSON = "package.json"
PACKAGE_KEYS: dict[str, str] = {
    HUSKY: HUSKY,
    LINT_STAGED: LINT_STAGED,
    SIMPLE_GIT_HOOKS: SIMPLE_GIT_HOOKS,
}
"""A package.json key → the manager that reads its hooks' commands from it."""

_ESCAPED = re.compile(r"\\u([0-9a-fA-F]{4})")
_MISSING = object()


@dataclass(frozen=True, slots=True)
class KeyChange:
    """A package.json write that may change what a hook manager runs."""

    key: str | None
    """The hook key it changes (the first, in ``PACKAGE_KEYS`` order); None when any of them
    may change (a write tool other than the built-in two, whose result is not known here)."""
    compared: bool
    """True when both texts are JSON and the key's values differ; False when the key is only
    named in a text that could not be compared."""


def package_key_change(tool_name: str, args: dict[str, Any], file: Path) -> KeyChange | None:
    """How a call of ``tool_name`` writing the package.json ``file`` (resolved) changes its hook
    keys, or None when it changes none of them or would write nothing (see the module's
    docstring)."""
    if tool_name not in ("write_file", "edit_file"):
        return KeyChange(None, compared=False)
    try:
        raw: bytes | None = read_regular_file(file)
    except UnreadableFile:
        return None  # a directory, a FIFO: the tools refuse it
    except FileNotFoundError:
        raw = None
    except OSError:  # unreadable: the edit tool fails too; an overwrite is judged by its content
        return _named_key(None, args.get("content")) if tool_name == "write_file" else None
    if tool_name == "write_file":
        content = args.get("content")
        if not isinstance(content, str):
            return None
        before = None if raw is None else raw.decode("utf-8", errors="replace")
        return changed_key(before, content)
    edited = _edited(raw, args)
    return None if edited is None else changed_key(*edited)


def changed_key(before: str | None, after: str) -> KeyChange | None:
    """The hook key whose value differs between package.json's text ``before`` (None: no file
    yet) and ``after``, or None; when either is not a JSON object's text, the first hook key
    named in either (uncompared). Texts that name no hook key are not parsed: no key can be
    there (a key's name is in the text, as itself or in ``\\u`` escapes)."""
    named = _named_key(before, after)
    if named is None:
        return None
    old = {} if before is None else _hook_values(before)
    new = _hook_values(after)
    if old is None or new is None:
        return named
    for key in PACKAGE_KEYS:
        if old.get(key, _MISSING) != new.get(key, _MISSING):
            return KeyChange(key, compared=True)
    return None


def _edited(raw: bytes | None, args: dict[str, Any]) -> tuple[str, str] | None:
    """The file's text and the text ``edit_file`` would leave, or None when it would fail."""
    old, new = args.get("old"), args.get("new")
    if raw is None or not isinstance(old, str) or not isinstance(new, str):
        return None
    try:
        check_edit_arguments(old, new)
        text = raw.decode("utf-8")
        occurrence(text, old, PACKAGE_JSON)
    except (ToolError, UnicodeDecodeError):
        return None
    return text, text.replace(old, new, 1)


def _hook_values(text: str) -> dict[str, str] | None:
    """Each hook key's value in a package.json's ``text``, written out exactly (so ``true`` is
    not ``1``, and key order counts); None when the text is not JSON. JSON that is not an object
    has no keys, as Node finds none on it."""
    try:
        parsed = json.loads(text.removeprefix("\ufeff"), parse_constant=_not_json)
        if not isinstance(parsed, dict):
            return {}
        return {key: json.dumps(parsed[key]) for key in PACKAGE_KEYS if key in parsed}
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python goes
        return None


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")  # Node's JSON.parse refuses NaN and Infinity


def _named_key(before: str | None, after: object) -> KeyChange | None:
    """The first hook key named in either text (escapes decoded), uncompared; None if none is."""
    texts = [_unescaped(text) for text in (before, after) if isinstance(text, str)]
    for key in PACKAGE_KEYS:
        if any(key in text for text in texts):
            return KeyChange(key, compared=False)
    return None


def _unescaped(text: str) -> str:
    if "\\u" not in text:
        return text
    return _ESCAPED.sub(lambda match: chr(int(match[1], 16)), text)
