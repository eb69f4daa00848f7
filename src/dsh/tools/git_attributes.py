"""What else decides the programs git runs, beside the config and the files it names
(:mod:`dsh.tools.git_programs`): the attributes files that route files through the drivers a
config defines, and the template directory git copies into a new repository.

- A driver is a program git runs on the files its attributes name: ``filter.<driver>.clean``,
  ``.smudge`` and ``.process`` (``git add``, ``git status``, a checkout), ``diff.<driver>.textconv``
  and ``.command`` (``git diff``, ``git log -p``), ``merge.<driver>.driver`` (a merge)
  (:func:`drivers`: the settings that define one, from the listing every write asks git for).
  The program is the user's, but which files it is given, and so what it is made to read and
  do, is the attributes' choice: ``* filter=crypt`` in a ``.gitattributes`` feeds every file of
  the repository to ``crypt``. Git reads attributes from a ``.gitattributes`` in any directory
  of the work tree, from ``$GIT_DIR/info/attributes`` (in the git directory: protected as it
  is) and from the file ``core.attributesFile`` names (by default
  ``$XDG_CONFIG_HOME/git/attributes``) (:func:`attributes_files`: those two, resolved).
  Whether a change to them routes a file through a driver depends on the whole of attribute
  syntax (a later line overrides an earlier one, ``-filter`` and ``!diff`` unset, a macro
  ``[attr]name`` defined in another file sets several, ``binary`` unsets ``diff``): any change
  counts while a driver is defined, none while none is (the attributes then choose only git's
  own behaviour: line endings, built-in diff hunk headers).

  What counts is what a driver *runs*, not which config defines it: the threat is the
  attributes handing the model's files to a program that runs or interprets them (``textconv =
  sh``, ``python``), and that program is as often the user's own, in ``~/.gitconfig``, as one
  a repository's ``.git/config`` planted; so a driver is not trusted for being in the global or
  system config. A driver whose command is what ``git lfs install`` writes (``KNOWN_COMMANDS``:
  ``git-lfs clean -- %f``, ``git-lfs smudge -- %f``, ``git-lfs filter-process``, and
  ``--skip-smudge``'s ``--skip`` forms) is no such program, whichever config holds it (``git
  lfs install --local`` writes the repository's): git-lfs stores and fetches the files it is
  given as data, never runs them, and takes no setting that runs a program from a file of the
  work tree (its ``.lfsconfig`` gives URLs and fetch filters only). What it does run on them
  is what the config calls its extensions (``lfs.extension.<name>.clean``, ``.smudge``):
  drivers in their own right here. And ``git-lfs`` is the installed tool only while ``PATH``
  has no relative directory (:func:`dsh.tools.git_programs.relative_dirs`): with one, the
  command may be a file of the workspace, and is a driver like any other.
- ``init.templateDir`` (or ``GIT_TEMPLATE_DIR``) names the directory whose ``hooks/``,
  ``info/`` and ``config`` git copies into every repository ``git init`` or ``git clone`` makes,
  and into an existing one ``git init`` is run in again (what is missing there): a hook
  written there runs in the next clone (``post-checkout``), wherever it is made
  (:func:`template_dirs`, resolved).

A relative path is taken from each base (the repository's top level, the workspace), ``~``
expanded, symlinks followed, as :mod:`dsh.tools.git_programs` takes a program's path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from dsh.errors import printable_line
from dsh.tools.git_programs import relative_dirs

ATTRIBUTES_NAME = ".gitattributes"
DRIVER_SETTINGS = frozenset(
    {"filter.clean", "filter.smudge", "filter.process", "diff.textconv", "diff.command",
     "merge.driver"}
)  # fmt: skip
"""``<section>.<name>`` of the settings that define a driver running a program, as git lists
them with the driver's name between (``filter.lfs.process``)."""
KNOWN_COMMANDS = {
    "filter.clean": frozenset({"git-lfs clean -- %f"}),
    "filter.smudge": frozenset({"git-lfs smudge -- %f", "git-lfs smudge --skip -- %f"}),
    "filter.process": frozenset({"git-lfs filter-process", "git-lfs filter-process --skip"}),
}
"""The driver commands that run a known tool, not a program of the user's choosing: what ``git
lfs install`` writes (``--skip-smudge``'s too), compared word for word."""
LFS_EXTENSION_PROGRAMS = frozenset({"clean", "smudge"})
"""``lfs.extension.<name>.<this>``: a program git-lfs runs on each file it is given."""
SHOWN_DRIVERS = 3
"""How many drivers the approval prompt names (then ``…``)."""
SHOWN_SETTING_CHARS = 80


def drivers(entries: Iterable[tuple[str, str]], search_path: str | None = None) -> tuple[str, ...]:
    """The settings among ``entries`` (``(key, value)`` as git lists them) that define a driver
    running a program (a value that is not empty; not a ``KNOWN_COMMANDS`` one while
    ``search_path``, ``PATH`` when None, has no relative directory), and git-lfs's extensions,
    made printable and cut to ``SHOWN_SETTING_CHARS``: a driver's name is the repository's
    text."""
    path = os.environ.get("PATH", "") if search_path is None else search_path
    known = KNOWN_COMMANDS if not relative_dirs(path) else {}
    found: dict[str, None] = {}
    for key, value in entries:
        section, _, rest = key.partition(".")
        driver, dot, name = rest.rpartition(".")
        if not (dot and driver and value.strip()):
            continue
        setting = f"{section}.{name}"
        if setting in DRIVER_SETTINGS:
            if " ".join(value.split()) in known.get(setting, ()):
                continue
        elif not (
            section == "lfs"
            and driver.lower().startswith("extension.")
            and name in LFS_EXTENSION_PROGRAMS
        ):
            continue
        found[printable_line(key)[:SHOWN_SETTING_CHARS]] = None
    return tuple(found)


def shown_drivers(settings: Sequence[str]) -> str:
    """The drivers' settings as a prompt names them: the first few, then ``…``."""
    shown = ", ".join(settings[:SHOWN_DRIVERS])
    return shown + (", …" if len(settings) > SHOWN_DRIVERS else "")


def attributes_files(
    entries: Iterable[tuple[str, str]], bases: Sequence[Path], environ: Mapping[str, str]
) -> tuple[Path, ...]:
    """The attributes files git reads by a config's or the environment's name (every
    ``core.attributesFile`` listed, else the XDG default), resolved; a ``.gitattributes`` is
    one by its name, wherever it is."""
    named = [value for key, value in entries if key == "core.attributesfile" and value]
    if not named:
        home = environ.get("HOME", "")
        xdg = environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
        named = [os.path.join(xdg, "git", "attributes")] if xdg else []
    return _resolved_all(named, bases)


def template_dirs(
    entries: Iterable[tuple[str, str]], bases: Sequence[Path], environ: Mapping[str, str]
) -> tuple[Path, ...]:
    """The template directories git copies from (``GIT_TEMPLATE_DIR``, every
    ``init.templateDir`` listed), resolved."""
    named = [value for key, value in entries if key == "init.templatedir" and value]
    if environ.get("GIT_TEMPLATE_DIR"):
        named.append(environ["GIT_TEMPLATE_DIR"])
    return _resolved_all(named, bases)


def _resolved_all(named: Iterable[str], bases: Sequence[Path]) -> tuple[Path, ...]:
    found: dict[Path, None] = {}
    for written in named:
        if "\0" in written:
            continue
        expanded = os.path.expanduser(written) if written.startswith("~") else written
        if expanded.startswith("~"):
            continue  # an unknown user's home
        for base in [Path("/")] if os.path.isabs(expanded) else bases:
            try:
                found[(base / expanded).resolve()] = None
            except (OSError, RuntimeError, ValueError):  # a symlink loop, a name too long
                continue
    return tuple(found)
