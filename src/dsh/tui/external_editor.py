"""ctrl+g in the composer: the draft edited in your own editor.

The editor is ``$VISUAL``, else ``$EDITOR`` (split as a shell would: ``code --wait`` works),
else the first of :data:`FALLBACKS` on the ``PATH``; a program named without a ``/`` is looked
for in ``PATH``'s absolute entries only (:mod:`dsh.tools.program_path`), never the
workspace's. The draft goes into a private temporary
file (``0600``, ``.md`` so the editor colours it as Markdown); the UI suspends (Textual's
``App.suspend``: the terminal is the editor's until it exits) and the editor runs on that file.
An exit status of 0 puts the file's text in the composer (its final line break dropped); any
other, or an editor that does not run, leaves the draft as it was and says why in one line. The
file is removed either way. While the editor is open the UI does nothing else: a running turn's
output shows once you are back.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.app import App, SuspendNotSupported

from dsh.errors import printable_line
from dsh.tools.program_path import find_program

FALLBACKS = ("nano", "vi")
NO_EDITOR = "No editor to open: set $VISUAL or $EDITOR (the draft is unchanged)."


def editor_command(environ: Mapping[str, str]) -> list[str] | None:
    """The editor's command line, without the file (None: none is set nor found)."""
    for name in ("VISUAL", "EDITOR"):
        value = environ.get(name, "").strip()
        if value:
            try:
                words = shlex.split(value)
            except ValueError:  # an unclosed quote: the value as one word
                words = [value]
            if words:
                return [find_program(words[0], environ) or words[0], *words[1:]]
    for fallback in FALLBACKS:
        found = find_program(fallback, environ)
        if found is not None:
            return [found]
    return None


@dataclass(frozen=True, slots=True)
class Edited:
    text: str | None
    """The draft as the editor left it (None: unchanged)."""
    note: str = ""
    """Why it is unchanged, in one line ("" when it changed)."""


def edit_draft(app: App[Any], draft: str, environ: Mapping[str, str] | None = None) -> Edited:
    """Open ``draft`` in the editor, the app suspended, and return what it became."""
    command = editor_command(os.environ if environ is None else environ)
    if command is None:
        return Edited(None, NO_EDITOR)
    name = printable_line(os.path.basename(command[0]))
    if os.sep not in command[0]:  # not found where a program may be looked for
        return Edited(
            None, f"Could not run the editor {name}: not found on PATH (draft unchanged)."
        )
    fd, path = tempfile.mkstemp(prefix="dsh-draft-", suffix=".md")  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as file:
            file.write(draft)
        try:
            code = _run(app, [*command, path])
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            return Edited(None, f"Could not run the editor {name}: {reason} (draft unchanged).")
        if code != 0:
            return Edited(None, f"The editor {name} exited with status {code}; draft unchanged.")
        with open(path, encoding="utf-8", errors="backslashreplace") as file:
            text = file.read()
        return Edited(text[:-1] if text.endswith("\n") else text)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _run(app: App[Any], command: list[str]) -> int:
    """Run ``command`` with the terminal given over to it; its exit status."""
    try:
        with app.suspend():
            return subprocess.run(command, check=False).returncode
    except SuspendNotSupported:  # no terminal to give (a headless or web driver)
        return subprocess.run(command, check=False, stdin=subprocess.DEVNULL).returncode
