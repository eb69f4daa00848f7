"""The files a git config names as programs: what git runs on the user's next git command.

``.git/config`` is protected (:mod:`dsh.tools.protected`), but a config that already says
``core.fsmonitor = ./x`` runs ``./x`` on every ``git status``: writing ``x`` is as good as
writing the config. :func:`named_programs` reads the settings whose value git runs, from the
listing :func:`~dsh.tools.git_hooks.git_layout` already asks git for at each write (``git
config --list --show-origin --includes``: every config git reads, included files and the
user's own among them, and every value, overridden ones too, since a write can make one count):

- ``PROGRAM_SETTINGS``: a key git runs as a shell command or a program (``core.fsmonitor``,
  ``core.sshCommand``, ``core.editor``, ``core.pager``, ``sequence.editor``, ``gpg.program``,
  ``credential.helper``, ``diff.<driver>.textconv``, ``filter.<driver>.clean``, …; and
  the programs of git-lfs, which git runs as a filter: ``lfs.extension.<name>.clean``, …);
- ``BANG_SETTINGS``: a key whose value is a shell command only when it begins with ``!``
  (``alias.<name>``, ``submodule.<name>.update``); ``credential.helper``'s ``!`` is dropped too.

What a value names (:func:`named_words`): each of its words as a shell splits it that can be a
file git runs, but options and git's placeholders (``%f``): a word with a ``/`` (``./x
--flag`` names ``./x``, ``sh scripts/conv.sh`` its script, ``!f() { ./x; }; f`` ``./x``); a
bare word a program is given only when it names a file there, or is named like one (``python3
conv.py``'s ``conv.py``, which a write would create), so ``git lfs filter-process``'s
``filter-process`` or ``--timeout 3600``'s ``3600`` protects nothing; a command's own name
without a ``/`` only through a relative directory on ``PATH`` (``.``, an empty entry, ``bin``),
since git and the shell look it up there, not in the current directory. A value of several
words whose first has a ``/`` also names itself whole (``/opt/My Tools/gpg``, a path with a
space in it, unquoted).
A relative path is taken from the repository's top level, where git runs these (``alias``'s
``!`` commands, filters and ``textconv`` by its documentation; the others since git moves
there before running a command), and from the workspace too, where the user may run git; ``~``
is expanded; a word written with a variable (``$GIT_DIR/x``) names nothing that can be found.
Every path is resolved (symlinks followed), so the file a symlink named in the config leads to
is found too. What a named program goes on to run or import is ordinary code, as a hook's is.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dsh.errors import printable_line

PROGRAM_SETTINGS = frozenset(
    {
        "core.fsmonitor", "core.sshcommand", "core.editor", "core.pager", "core.askpass",
        "core.gitproxy", "core.alternaterefscommand", "sequence.editor", "diff.external",
        "gpg.program", "gpg.*.program", "gpg.ssh.defaultkeycommand", "credential.helper",
        "credential.*.helper", "interactive.difffilter", "sendemail.sendmailcmd",
        "sendemail.smtpserver", "sendemail.tocmd", "sendemail.cccmd", "sendemail.*.sendmailcmd",
        "sendemail.*.smtpserver", "sendemail.*.tocmd", "sendemail.*.cccmd",
        "uploadpack.packobjectshook", "diff.*.textconv", "diff.*.command", "filter.*.clean",
        "filter.*.smudge", "filter.*.process", "merge.*.driver", "mergetool.*.cmd",
        "mergetool.*.path", "difftool.*.cmd", "difftool.*.path", "remote.*.uploadpack",
        "remote.*.receivepack", "browser.*.cmd", "browser.*.path", "man.*.cmd", "man.*.path",
        "tar.*.command", "trailer.*.command", "trailer.*.cmd", "guitool.*.cmd", "pager.?",
        "lfs.*.clean", "lfs.*.smudge", "lfs.*.path",
    }
)  # fmt: skip
"""Keys whose value git runs (git-config(1)), as git lists them (section and name lower case):
``*`` stands for any subsection, ``pager.?`` for any name in ``[pager]``; and those git-lfs
runs, the filter git runs (git-lfs-config(5): ``lfs.extension.<name>.clean`` and ``.smudge``,
on each file it is given, and ``lfs.customtransfer.<name>.path``, on a push or a fetch)."""
BANG_SETTINGS = frozenset({"alias.?", "submodule.*.update"})
"""Keys whose value git runs as a shell command when it begins with ``!``."""
_OPERATORS = frozenset(";&|()<>")
_STARTS_A_COMMAND = frozenset(
    {"{", "}", "!", "then", "do", "else", "if", "while", "until", "time", "exec", "command",
     "env", "nohup", "sudo", "xargs"}
)  # fmt: skip
"""Words after which a shell (or the program they name) runs the next word as a command."""
_SHELL_SYNTAX = re.compile(r"[\"'\\;&|()<>]")
"""What ``shlex`` is needed for: quotes, escapes, operators."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=(.*)", re.DOTALL)
SHOWN_SETTING_CHARS = 80
WordKind = Literal["path", "argument", "command"]
_FILE_NAMED = re.compile(r"[^/]*[A-Za-z_][^/]*\.[A-Za-z][A-Za-z0-9]*")
"""A bare word named like a file (a name, a dot, an extension: ``conv.py``, ``clean.sh``)."""


@dataclass(frozen=True, slots=True)
class NamedProgram:
    """A file a git config names as a program."""

    path: Path
    """The file, resolved (symlinks followed); it need not exist."""
    setting: str
    """The key naming it, as git lists it (``core.fsmonitor``, ``diff.pdf.textconv``), made
    printable and cut to ``SHOWN_SETTING_CHARS``: a subsection is the repository's text."""


def program_setting(key: str) -> str | None:
    """``"command"`` when git runs ``key``'s value, ``"bang"`` when it does so only for a value
    beginning with ``!``, else None."""
    section, _, rest = key.partition(".")
    _, dot, name = rest.rpartition(".")
    shapes = {f"{section}.?"}
    shapes.add(f"{section}.*.{name}" if dot else f"{section}.{name}")
    if shapes & PROGRAM_SETTINGS:
        return "command"
    if shapes & BANG_SETTINGS:
        return "bang"
    return None


def named_words(value: str, *, bang: bool = False) -> list[tuple[str, WordKind]]:
    """What ``value`` names as a program or a script it runs (module docstring), each word as
    written with its kind: ``"path"`` (it has a ``/``), ``"argument"`` (a bare word a program
    is given, ``conv.py`` in ``python3 conv.py``), ``"command"`` (a command's own bare name,
    which a shell looks up on ``PATH``); with ``bang``, only when it begins with ``!``."""
    if bang and not value.startswith("!"):
        return []
    command = value.removeprefix("!").strip()
    words = _words(command)
    named: dict[str, WordKind] = {}
    if len(words) > 1 and "/" in words[0]:  # a program's path with a space in it, unquoted
        named[command] = "path"
    position = True  # the next word is a command's name
    for word in words:
        if (word and set(word) <= _OPERATORS) or word in _STARTS_A_COMMAND:
            position = True
            continue
        if word.startswith("%"):
            continue  # a placeholder git fills in (%f, %O, %A): no file of the workspace
        assigned = _ASSIGNMENT.fullmatch(word)
        if assigned is not None or word.startswith("-"):
            if assigned is None:
                _, _, assigned_value = word.partition("=")
            else:
                assigned_value = assigned.group(1)
            if "/" in assigned_value:
                named.setdefault(assigned_value, "path")
            continue
        kind: WordKind = "path" if "/" in word else "command" if position else "argument"
        named.setdefault(word, kind)
        position = False
    return list(named.items())


def named_files(value: str, *, bang: bool = False) -> list[str]:
    """The words ``value`` names that may be files of the workspace (``named_words``'s paths
    and arguments; a command's bare name is looked up on ``PATH``), as written."""
    return [word for word, kind in named_words(value, bang=bang) if kind != "command"]


def named_programs(
    entries: Iterable[tuple[str, str]],
    bases: Sequence[Path],
    search_path: str | None = None,
) -> tuple[NamedProgram, ...]:
    """The files the config ``entries`` (``(key, value)`` as git lists them) name as programs,
    a relative one taken from each of ``bases`` (the repository's top level, the workspace).

    A word with a ``/`` names its file, whether it exists or not. A bare argument names a file
    only where one of that name is there (``python3 conv.py``'s ``conv.py``), or where it is
    named like one a write would create (a name with an extension, ``conv.py``): ``git lfs
    filter-process``'s ``filter-process``, ``--timeout 3600``'s ``3600``, ``-L ours``'s
    ``ours`` name no file, and a file made of that name is none git runs. A command's bare name
    is looked up on ``search_path`` (``PATH``: the environment's when None), as a shell and git
    look it up: it names a file of the workspace only through a relative directory there
    (``.``, an empty entry, ``bin``), taken from each base."""
    relative = relative_dirs(os.environ.get("PATH", "") if search_path is None else search_path)
    found: dict[Path, NamedProgram] = {}
    seen: set[str] = set()
    for key, value in entries:
        kind = program_setting(key)
        if kind is None:
            continue
        setting = printable_line(key)[:SHOWN_SETTING_CHARS]
        for written, word_kind in named_words(value, bang=kind == "bang"):
            if written in seen:
                continue  # named by an earlier setting, which the prompt names
            seen.add(written)
            if word_kind == "command":
                places = [p for d in relative for p in _places(os.path.join(d, written), bases)]
            elif word_kind == "argument" and not _FILE_NAMED.fullmatch(written):
                # no "/" in it: one lstat a base, before anything is resolved
                there = [base for base in bases if os.path.lexists(os.path.join(base, written))]
                places = _places(written, there)
            else:
                places = _places(written, bases)
            for path in places:
                found.setdefault(path, NamedProgram(path, setting))
    return tuple(found.values())


def relative_dirs(search_path: str) -> list[str]:
    """The entries of a ``PATH`` a shell takes from the current directory (an empty one is
    ``.``)."""
    return list(
        dict.fromkeys(d or "." for d in search_path.split(os.pathsep) if not d.startswith("/"))
    )


def _words(command: str) -> list[str]:
    """``command``'s words as a shell splits them, its operators (``;``, ``&&``, ``|``, ``(``)
    as words of their own; split at white space when its quotes do not close. A command
    without quotes, escapes or operators (most are) is split at white space at once."""
    if _SHELL_SYNTAX.search(command) is None:
        return command.split()
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return command.split()


def _places(written: str, bases: Sequence[Path]) -> list[Path]:
    """Where the path ``written`` leads, resolved: from each of ``bases`` when relative."""
    if "\0" in written:
        return []
    expanded = os.path.expanduser(written) if written.startswith("~") else written
    if expanded.startswith("~"):
        return []  # an unknown user's home
    found = []
    for base in [""] if os.path.isabs(expanded) else bases:
        try:
            resolved = Path(_resolved_from(str(base), expanded))
        except (OSError, RuntimeError, ValueError):  # a symlink loop, a name too long
            continue
        if resolved not in found:
            found.append(resolved)
    return found


def _resolved_from(base: str, written: str) -> str:
    """``written`` taken from the resolved directory ``base`` (or absolute, ``base`` empty) and
    resolved as ``Path.resolve`` resolves it, looking only at its own names: one ``lstat``
    each, up to the first that does not exist (nothing below it can be a symlink), the whole
    path resolved again only when one of them is a symlink or ``..``."""
    whole = os.path.join(base, written)
    if not base:
        return os.path.realpath(whole)
    path = base
    names = written.split("/")
    for at, name in enumerate(names):
        if name in ("", "."):
            continue
        if name == "..":
            return os.path.realpath(whole)
        path = os.path.join(path, name)
        try:
            link = stat.S_ISLNK(os.lstat(path).st_mode)
        except FileNotFoundError:
            return os.path.normpath(os.path.join(path, *names[at + 1 :]))
        if link:
            return os.path.realpath(whole)
    return path
