"""The blocks a person's ``!cmd`` output takes in their next prompt, and that prompt without them.

In the terminal UI, ``!cmd`` runs a command and its output goes to the model with the next
prompt, each command as one block ahead of what was typed::

    I ran `git status --short` in the workspace; it printed:
    ```
     M calc.py
    ```

    fix the failing test

The fence is longer than any run of backticks in the output, so the block ends at the first line
holding just that fence. A session's title is what the person typed, not the first command's
output ("I ran `echo …` in the work…" titled such sessions): :func:`typed_part` takes the blocks
off the front (:func:`split_blocks` keeps them: ``/rewind`` puts them back to go again).
"""

from __future__ import annotations

import re

_BLOCK = re.compile(
    r"I ran `(?:[^\n]*?)` in the workspace; it (?:printed|failed):\n(?P<fence>`{3,})\n"
    r"(?:.*?\n)?(?P=fence)(?:\n\n|\Z)",
    re.DOTALL,
)


def shell_block(command: str, text: str, *, failed: bool) -> str:
    """One command's output as it goes into the next prompt."""
    outcome = "failed" if failed else "printed"
    fence = "```"
    while fence in text:
        fence += "`"
    body = text.rstrip()
    return f"I ran `{command}` in the workspace; it {outcome}:\n{fence}\n{body}\n{fence}"


def typed_part(prompt: str) -> str:
    """``prompt`` without the ``!cmd`` blocks at its start: what the person typed (the whole
    prompt when nothing follows the blocks)."""
    return split_blocks(prompt)[1]


def split_blocks(prompt: str) -> tuple[list[str], str]:
    """The ``!cmd`` blocks at the start of ``prompt`` (as ``shell_block`` made them) and what the
    person typed after them; no blocks and the whole prompt when nothing follows them."""
    blocks: list[str] = []
    rest = prompt
    while (found := _BLOCK.match(rest)) is not None:
        blocks.append(found.group().removesuffix("\n\n"))
        rest = rest[found.end() :]
    return (blocks, rest) if rest.strip() else ([], prompt)
