"""Slash commands typed in the prompt box."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from dsh.agent.prompt_commands import BUILT_IN_COMMANDS, slash_command

HELP = """\
Commands
  /compact [focus]   compact the conversation now (idle sessions only)
  /undo [--dry-run]  take back the file edits (write_file, edit_file) of the last turn
                     not undone yet, exactly or not at all (bash changes stay); --dry-run
                     lists them
  /context           what the model sees: system, tools, stubs, state, tail; cache hits
  /cost              billed tokens and a list-price estimate
  /sessions          pick a session to open (title, age, size, workspace): type to
                     filter; other workspaces' sessions are greyed (open them there)
  /title [TEXT]      show the session's title, or rename it (logged)
  /resume ID         open another session (an id or a unique prefix)
  /new, /clear       start a new session here (the one you leave stays listed: /resume
                     opens it again)
  /rewind [N]        pick a prompt (or turn N): a copy of the session up to it opens,
                     the prompt in the composer to change; files stay as they are
  /fork              continue in a copy of this session (the original stays as it is)
  /model [NAME]      show the model and pick one the server lists, or use NAME for the
                     next turns (refused when the server does not list it)
  /retry             send the last turn's prompt again, when that turn failed or was
                     cancelled
  /warnings          dsh's warnings and errors since the UI started, with their times
                     (each also shows for a moment in a corner)
  /approval [MODE]   show the approval mode, or use ask, auto or read-only for the
                     rest of this run (the config file is unchanged; dsh --yes starts
                     in auto, --allow bash,write,network,mcp lets those kinds run
                     unasked)
  /diff              the workspace's changes since its last commit (git), coloured
  /copy [code]       copy the last reply (code: its last code block) to the clipboard
  !cmd               run cmd in the workspace (unasked: you typed it; not under
                     read-only); its output goes to the model with your next prompt
  /help              this help, with your prompt commands (/NAME [args]: the text of
                     $DSH_HOME/commands/NAME.md or ./.dsh/commands/NAME.md as the prompt)
  /quit              leave dsh (ctrl+q works too)
  //text             send "/text" as a prompt (a path like /usr/lib/x is sent as it is)
Keys
  enter              send the prompt        shift+enter, ctrl+j   a new line
                     (a paste of more than 20 lines shows as [pasted N lines], sent whole)
  up / down          earlier prompts, this run's and earlier runs' (from the first / last
                     line of the draft)
  ctrl+r             search the earlier prompts: type to search, ctrl+r older, enter
                     takes the match into the box, esc puts your draft back
  ctrl+g             edit the draft in $VISUAL / $EDITOR
  pgup / pgdn        scroll the transcript  (home / end too, on an empty draft)
  esc, ctrl+c        cancel the running turn; when idle, clear the draft (ctrl+z
                     brings it back); ctrl+c twice on an empty draft leaves dsh
  enter while busy   queue the draft: it is sent when the turn ends (not after a cancel
                     or a failure: it comes back into the box); esc takes it back
  approval prompt    o allow once · a always (this session) · d or n deny the call ·
                     esc deny it and cancel the turn; keys typed as it opens go to your
                     draft until you pause; up / down, pgup / pgdn, home / end (or the
                     mouse wheel) scroll a call taller than its box
  ctrl+t             show / hide the model's reasoning
  ctrl+o             expand / collapse the chosen (or newest) tool card or marker
  ctrl+f             find in the transcript: enter / down next, shift+enter / up
                     previous, esc back to the prompt
  tab                complete a /command or an @path from the workspace; with nothing to
                     complete, move to the transcript: up / down select a card, enter
                     expands it, a click expands too; pgup / pgdn / home / end scroll"""

COMMANDS = BUILT_IN_COMMANDS
"""The terminal UI's commands: the built-ins every face reserves (``/new`` among them, and
``/clear``, the name other agents give it), so no prompt command is shadowed here alone."""


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    arg: str
    """Everything after the name, stripped ("" when none)."""


def parse_command(text: str) -> Command | None:
    """``/name rest`` as a Command (``dsh.agent.prompt_commands.slash_command``); None for a
    prompt."""
    found = slash_command(text)
    return None if found is None else Command(*found)


def prompt_text(draft: str) -> str:
    """What a draft sends as a prompt: its leading blank lines and trailing whitespace dropped,
    the first line's indentation kept (a pasted code block stays as it was); ``//…`` sends
    ``/…``."""
    lines = draft.rstrip().split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    text = "\n".join(lines)
    return text[1:] if text.lstrip().startswith("//") else text


WAITING_COMMANDS = frozenset({"compact", "new", "clear", "retry", "undo", "rewind", "fork"})
"""The commands that change the session (or open another): one typed while a turn runs is
queued like a prompt, and runs when the turn ends well."""


def waits(shell: str | None, command: Command | None) -> bool:
    """True if a draft must wait for the running turn (a prompt, a prompt command, ``!cmd``,
    ``/compact``, ``/new``, ``/retry``, ``/undo``, ``/rewind``, ``/fork``, ``/resume ID``,
    ``/title TEXT``); the other commands answer at once."""
    if shell is not None:
        return bool(shell)
    if command is None or command.name not in COMMANDS:
        return True
    if command.name in WAITING_COMMANDS:
        return True
    return command.name in ("resume", "title") and bool(command.arg)


def closest_command(name: str, names: Iterable[str]) -> str | None:
    """The command ``name`` most likely meant to be (a typo of it), if one is close."""
    found = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return found[0] if found else None
