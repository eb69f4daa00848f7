"""Prompt commands: a Markdown file that a slash command sends as the prompt.

``$DSH_HOME/commands/review.md`` (yours) or ``<workspace>/.dsh/commands/review.md`` (the
project's) makes ``/review src/app.py`` send the file's text with ``$ARGUMENTS`` replaced by
``src/app.py``, and ``$1`` … ``$9`` by its first to ninth word as a shell splits them (quotes
group; one that is missing is empty); without either in the text, the arguments follow it after
a blank line. A file in a subdirectory is namespaced by it: ``frontend/component.md`` is
``/frontend:component``. An optional front matter block (``---`` lines around YAML) may give a
``description`` for ``/help``; without one, the text's first line is the description. dsh's own
prompt commands (``/init``, :mod:`dsh.agent.init_command`) come after yours and the project's,
which may replace one with a file of its name.

A command only writes a prompt, as a person would type it: what the model then does goes
through the same approval policy as any prompt, so a project's commands need no trust (like
its AGENTS.md). A built-in command's name always means the built-in; your own command wins
over the project's of the same name. A file that cannot be a command (a bad name, over
``MAX_BYTES``, not UTF-8, bad front matter, not a regular file, deeper than ``MAX_DEPTH``
directories) is skipped with a warning naming it and why. Each is read as a small file
(:mod:`dsh.config.small_file`): a FIFO or a symlink to ``/dev/zero`` a repository put there is
skipped so, not read. A project's command must lie in the
workspace, as any file a tool reads: one that is (or whose ``.dsh/commands`` directory is) a
symlink leading out of it is skipped with a warning saying so, never naming where it leads, and
nothing there is read (a subdirectory so is skipped whole, unlisted); your own commands may lie
anywhere.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dsh.agent.init_command import INIT_DESCRIPTION, INIT_NAME, INIT_TEMPLATE
from dsh.config.small_file import OUTSIDE, UnreadableFile, lies_within, read_small_file
from dsh.errors import printable_line

log = logging.getLogger(__name__)

USER_DIR = "commands"
"""Your commands: ``$DSH_HOME/commands/*.md``."""
PROJECT_DIR = Path(".dsh") / "commands"
"""A project's commands: ``<workspace>/.dsh/commands/*.md``."""
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
"""A command's name: its file's name without ``.md``, lower case; in a subdirectory, each
directory's name and the file's, joined by ``:`` (``frontend:component``)."""
MAX_DEPTH = 3
"""Subdirectories deeper than this many levels are not looked into (said in a warning)."""
MAX_BYTES = 64_000
ARGUMENTS = "$ARGUMENTS"
PLACEHOLDER = re.compile(r"\$ARGUMENTS|\$([1-9])(?![0-9])")
"""``$ARGUMENTS``, or ``$1`` … ``$9`` (``$10`` is no placeholder)."""
DESCRIPTION_CHARS = 72

Scope = Literal["user", "project", "dsh"]

BUILT_IN_COMMANDS = (
    "compact",
    "undo",
    "context",
    "cost",
    "sessions",
    "title",
    "resume",
    "model",
    "warnings",
    "approval",
    "diff",
    "copy",
    "help",
    "quit",
    "new",
    "clear",
    "retry",
    "rewind",
    "fork",
)
"""The terminal UI's own commands (the web page's are among them; ``/clear`` is ``/new``): a
prompt command may not take one of these names in any face, so a command file named so is
skipped with the same warning by every face, and every face lists the same commands."""


def slash_command(text: str) -> tuple[str, str] | None:
    """(name, arguments) of ``/name arguments`` (the name lower-cased, ending at any
    whitespace; the arguments keep their lines); None for a prompt: text not starting with
    "/", starting with "//" (sent as "/…"), or a path (``/usr/lib/x is missing``)."""
    text = text.strip()
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, *rest = text[1:].split(maxsplit=1) or [""]
    if "/" in name:
        return None
    return name.lower(), rest[0].strip() if rest else ""


def expand_prompt(text: str, commands: PromptCommands) -> str:
    """``text`` as a prompt: a prompt command's text when ``text`` invokes one, else itself."""
    found = slash_command(text)
    if found is None:
        return text
    expanded = commands.expand(*found)
    return text if expanded is None else expanded


@dataclass(frozen=True, slots=True)
class PromptCommand:
    name: str
    description: str
    template: str
    path: Path | None
    """None for dsh's own."""
    scope: Scope

    def expand(self, arguments: str) -> str:
        """The prompt ``/name arguments`` sends."""
        arguments = arguments.strip()
        if PLACEHOLDER.search(self.template) is None:
            return f"{self.template}\n\n{arguments}" if arguments else self.template
        words = shell_words(arguments)

        def filled(found: re.Match[str]) -> str:
            if found.group(1) is None:
                return arguments
            index = int(found.group(1)) - 1
            return words[index] if index < len(words) else ""

        return PLACEHOLDER.sub(filled, self.template).strip()


def shell_words(arguments: str) -> list[str]:
    """``arguments`` split as a shell splits words (``"fix the bug" 12`` is two); split at
    white space alone when its quotes do not pair (``it's broken``)."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


@dataclass(frozen=True, slots=True)
class PromptCommands:
    by_name: dict[str, PromptCommand] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.by_name))

    def expand(self, name: str, arguments: str) -> str | None:
        """The prompt ``/name arguments`` sends; None when ``name`` is no prompt command."""
        command = self.by_name.get(name)
        return None if command is None else command.expand(arguments)

    def help_text(self) -> str:
        """The ``/help`` section listing these commands, then the files skipped and why ("" when
        there are neither)."""
        lines: list[str] = []
        if self.by_name:
            width = max(len(name) for name in self.by_name) + 2
            lines.append("Your commands ($DSH_HOME/commands, ./.dsh/commands)")
            lines += [
                f"  /{name:<{width}} {command.description}  ({command.scope})"
                for name, command in sorted(self.by_name.items())
            ]
        if self.warnings:
            lines.append("Not loaded")
            lines += [f"  {warning}" for warning in self.warnings]
        return "\n".join(lines)


def load_prompt_commands(home: Path, workspace: Path, reserved: Collection[str]) -> PromptCommands:
    """The prompt commands of ``home`` and ``workspace``, then dsh's own; ``reserved``: the
    built-in names."""
    by_name: dict[str, PromptCommand] = {}
    warnings: list[str] = []
    for scope, directory, within in _sources(home, workspace):
        if within is not None and directory.exists() and not lies_within(directory, within):
            warnings.append(f"prompt commands in {directory} skipped: {OUTSIDE}")
            continue
        for path, name in _markdown_files(directory, warnings, within):
            problem = _name_problem(name, reserved)
            if problem is None and name in by_name:
                problem = f"your own /{name} ({by_name[name].path}) wins"
            command = None
            if problem is None:
                command, problem = _read(path, name, scope, within)
            if command is not None:
                by_name[name] = command
            else:
                warnings.append(f"prompt command {path} skipped: {problem}")
    if INIT_NAME not in by_name and INIT_NAME not in reserved:
        by_name[INIT_NAME] = PromptCommand(INIT_NAME, INIT_DESCRIPTION, INIT_TEMPLATE, None, "dsh")
    return PromptCommands(by_name, tuple(printable_line(w) for w in warnings))


def _sources(home: Path, workspace: Path) -> tuple[tuple[Scope, Path, Path | None], ...]:
    """(scope, directory, the directory its files must lie in) of yours, then the project's."""
    return (("user", home / USER_DIR, None), ("project", workspace / PROJECT_DIR, workspace))


class PromptCommandSource:
    """The prompt commands of one workspace, read again only when a file in either directory
    (or below) changed (its name, size or modification time); each new warning is logged once."""

    def __init__(self, home: Path, workspace: Path, reserved: Collection[str]) -> None:
        self.home, self.workspace, self.reserved = home, workspace, tuple(reserved)
        self._signature: tuple[tuple[str, int, int], ...] | None = None
        self._commands = PromptCommands()
        self._warned: set[str] = set()

    def current(self) -> PromptCommands:
        signature = tuple(self._stats())
        if signature != self._signature:
            self._signature = signature
            self._commands = load_prompt_commands(self.home, self.workspace, self.reserved)
            for warning in self._commands.warnings:
                if warning not in self._warned:
                    self._warned.add(warning)
                    log.warning("%s", warning)
        return self._commands

    def _stats(self) -> Iterator[tuple[str, int, int]]:
        for _, directory, within in _sources(self.home, self.workspace):
            if within is not None and directory.exists() and not lies_within(directory, within):
                continue
            for path, _ in _markdown_files(directory, [], within):
                try:
                    stat = path.stat()
                except OSError:
                    continue
                yield str(path), stat.st_size, stat.st_mtime_ns


def _markdown_files(
    directory: Path, warnings: list[str], within: Path | None
) -> list[tuple[Path, str]]:
    """(path, command name) of each ``.md`` file in ``directory`` and its subdirectories (at
    most ``MAX_DEPTH`` levels, each looked into once; one leading out of ``within`` is skipped
    with a warning, never looked into), by path."""
    found: list[tuple[Path, str]] = []
    seen = {os.path.realpath(directory)}

    def walk(folder: Path, prefix: str, depth: int) -> None:
        try:
            entries = sorted(folder.iterdir())
        except FileNotFoundError:
            return
        except OSError as exc:
            warnings.append(f"prompt commands in {folder} unreadable: {exc.strerror or exc}")
            return
        for path in entries:
            if not path.is_dir():
                if path.suffix == ".md":
                    found.append((path, prefix + path.stem.lower()))
                continue
            if within is not None and not lies_within(path, within):
                warnings.append(f"prompt commands in {path} skipped: {OUTSIDE}")
            elif depth >= MAX_DEPTH:
                warnings.append(
                    f"prompt commands in {path} skipped: deeper than {MAX_DEPTH} directories"
                )
            elif os.path.realpath(path) not in seen:  # a symlink back up is looked into once
                seen.add(os.path.realpath(path))
                walk(path, f"{prefix}{path.name.lower()}:", depth + 1)

    walk(directory, "", 0)
    return found


def _name_problem(name: str, reserved: Collection[str]) -> str | None:
    parts = name.split(":")
    if any(NAME.fullmatch(part) is None for part in parts):
        if len(parts) == 1:
            return "a name is 1 to 40 letters, digits, _ or -, starting with a letter or digit"
        return (
            "each of its directories' names and its own is 1 to 40 letters, digits, _ or -, "
            "starting with a letter or digit"
        )
    if name in reserved:
        return f"/{name} is a built-in command"
    return None


def _read(
    path: Path, name: str, scope: Scope, within: Path | None
) -> tuple[PromptCommand | None, str | None]:
    try:
        data = read_small_file(path, MAX_BYTES, within=within)
    except UnreadableFile as exc:
        return None, exc.reason
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    meta, body, problem = _front_matter(text)
    if problem is not None:
        return None, problem
    body = body.strip()
    if not body:
        return None, "no prompt text"
    description = meta.get("description")
    if description is None:
        description = body.splitlines()[0]
    elif not isinstance(description, str):
        return None, "its description must be text"
    description = " ".join(description.split())
    if len(description) > DESCRIPTION_CHARS:
        description = description[: DESCRIPTION_CHARS - 1] + "…"
    return PromptCommand(name, printable_line(description), body, path, scope), None


def _front_matter(text: str) -> tuple[dict[str, object], str, str | None]:
    """(front matter, body, problem) of ``text``."""
    text = text.removeprefix("\ufeff")
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return {}, text, None
    import yaml  # type: ignore[import-untyped,unused-ignore]  # here: no command file, no YAML

    lines = text.splitlines(keepends=True)
    for end in range(1, len(lines)):
        if lines[end].rstrip("\r\n") == "---":
            try:
                meta = yaml.safe_load("".join(lines[1:end]))
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" (line {mark.line + 2})" if mark is not None else ""
                return {}, "", f"its front matter is not YAML{where}"
            if meta is None:
                meta = {}
            if not isinstance(meta, dict):
                return {}, "", "its front matter must be a mapping (description: …)"
            return meta, "".join(lines[end + 1 :]), None
    return {}, "", "its front matter has no closing --- line"
