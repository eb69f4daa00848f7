"""``/copy``: the last assistant reply, as its Markdown, to the clipboard; ``/copy code``: the
last fenced code block of that reply, without its fences.

The text goes through Textual's ``App.copy_to_clipboard``: an OSC 52 sequence the terminal
puts on the system clipboard (over ssh too; tmux needs ``set-clipboard on``, and a terminal
that ignores OSC 52 copies nothing, which dsh cannot see). A note says how much was copied,
or that there was nothing to copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from dsh.tui.blocks import Block

if TYPE_CHECKING:
    from dsh.tui.app import DshApp

USAGE = "usage: /copy (the last reply) or /copy code (its last code block)"
NO_REPLY = "Nothing to copy: no reply from the model yet."
NO_CODE = "Nothing to copy: the last reply has no fenced code block."
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def last_reply(blocks: Iterable[Block]) -> str | None:
    """The text of the newest assistant message that has some (None: none has)."""
    for block in reversed(list(blocks)):
        if block.kind == "assistant" and block.message is not None:
            text = block.message.text()
            if text.strip():
                return text
    return None


def last_code_block(markdown: str) -> str | None:
    """The content of the last fenced code block (``` or ~~~; one left open runs to the end,
    as CommonMark reads it); None when there is none."""
    found: str | None = None
    fence: str | None = None
    body: list[str] = []
    for line in markdown.split("\n"):
        match = _FENCE.match(line)
        if fence is None:
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                fence, body = match.group(1), []
        elif (
            match
            and match.group(1)[0] == fence[0]
            and len(match.group(1)) >= len(fence)
            and not match.group(2).strip()
        ):
            found, fence = "\n".join(body), None
        else:
            body.append(line)
    return "\n".join(body) if fence is not None else found


def copy_command(app: DshApp, arg: str) -> None:
    """Run ``/copy`` (``arg``: "" or "code")."""
    if arg.lower() not in ("", "code"):
        app.note(USAGE)
        return
    reply = last_reply(app.transcript.model.blocks)
    text = reply if reply is None or not arg else last_code_block(reply)
    if not text:
        app.note(NO_REPLY if reply is None else NO_CODE)
        return
    app.copy_to_clipboard(text.encode("utf-8", "backslashreplace").decode("utf-8"))
    what = "the last code block" if arg else "the last reply"
    app.note(f"copied {len(text)} characters ({what})")
