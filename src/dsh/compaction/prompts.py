"""Instructions for model summarisers and the framing of checkpoint text.

Every string the model reads about compaction lives here, once.
"""

from __future__ import annotations

from dsh.compaction.summarizer import SummaryTask

SUMMARY_SECTIONS = (
    "Request and intent",
    "Key technical facts",
    "Files and code",
    "Errors and fixes",
    "Pending work",
    "Current state",
    "Next step",
)

SUMMARY_INSTRUCTION = """\
Write a checkpoint of the conversation above so the work can continue without it.
Use exactly these Markdown sections, in this order, with terse bullets ("(none)" when empty):
{sections}
Copy literals exactly: error messages, file paths, identifiers, numbers, config keys and values.
Do not mention that this is a summary or a compaction, and do not call tools.{previous}{focus}"""

PREVIOUS_NOTE = """
An earlier checkpoint is part of the conversation above: merge its content into the new
sections (keep what still holds, update what changed, drop what was superseded); do not copy it
as a block."""

FOCUS_NOTE = "\nThe user asked to keep this in focus: {focus}"

STUB_INSTRUCTION = """\
Index the conversation slice above in at most {lines} short lines: what was asked, what was done,
what came out. Then one line starting with "Keywords — " listing its rarest exact literals
(error strings, paths, ids, values, config keys) grouped by kind, e.g.
Keywords — error: "ValueError: bad port"; path: src/app.py; id: ZEBRA-7731; config: retries=5
Do not restate the working state or earlier index entries given as background; no footer."""

STATE_INSTRUCTION = """\
Rewrite the working-memory state of this session from the previous state and the conversation
slice above. Merge, don't restate: keep what still holds, replace what changed (a superseded value
must not survive as current), add what is new. Sections, in order: ## Goal, ## Decisions,
## Current state, ## Constraints, ## Next steps. At most about {tokens} tokens. No footer."""

SUMMARY_PREAMBLE = (
    "[This is an automatically generated checkpoint of earlier conversation. Treat it as "
    "background you already know and continue the work without acknowledging it.]"
)
STUB_PREAMBLE = (
    "[Index entry for earlier conversation: a frozen directory card, not instructions. "
    "The originals can be read with history_read.]"
)


SUMMARISER_SYSTEM = (
    "You maintain the compacted history of a coding agent's session: short, exact index entries "
    "and a working-memory state. You never call tools and never address the user."
)


def context_for(task: SummaryTask) -> str | None:
    """What precedes the slice in a stub or state call: the parts sibling calls of one pass
    share, byte for byte, so a provider can serve them from its prompt cache."""
    if task.kind == "stub":
        parts = []
        if task.background:
            parts.append(
                f"Background (the current working state; do not index it):\n{task.background}"
            )
        if task.keyword_lines:
            parts.append("Already indexed keywords:\n" + "\n".join(task.keyword_lines))
        if task.recent_stubs:
            parts.append("Most recent index entries:\n" + "\n\n".join(task.recent_stubs))
        return "\n\n".join(parts) or None
    if task.kind == "state" and task.previous:
        return f"Previous state:\n{task.previous}"
    return None


def instruction_for(task: SummaryTask) -> str:
    """The last user message of a model summary call for ``task``."""
    if task.kind == "stub":
        return STUB_INSTRUCTION.format(lines=3)
    if task.kind == "state":
        focus = FOCUS_NOTE.format(focus=task.focus) if task.focus else ""
        return STATE_INSTRUCTION.format(tokens=task.max_tokens) + focus
    return SUMMARY_INSTRUCTION.format(
        sections="\n".join(f"## {name}" for name in SUMMARY_SECTIONS),
        previous=PREVIOUS_NOTE if task.previous else "",
        focus=FOCUS_NOTE.format(focus=task.focus) if task.focus else "",
    )


def frame_summary(text: str) -> str:
    """A state-class checkpoint body: preamble + tagged summary."""
    return f"{SUMMARY_PREAMBLE}\n<compacted-summary>\n{text}\n</compacted-summary>"


def frame_stub(text: str) -> str:
    """An index-stub checkpoint body."""
    return f"{STUB_PREAMBLE}\n<compacted-index-stub>\n{text}\n</compacted-index-stub>"


def footer(summary_seq: int, span: tuple[int, int]) -> str:
    """The code-written footer every recallable checkpoint ends with (spec §4.4)."""
    start, end = span
    return (
        f"[checkpoint c{summary_seq}: shadows conversation span #{start}–#{end}; "
        "originals retrievable via history_read]"
    )


def unframe(text: str) -> str:
    """The summary inside a framed checkpoint (for merging a previous checkpoint)."""
    for tag in ("compacted-summary", "compacted-index-stub"):
        open_tag, close_tag = f"<{tag}>", f"</{tag}>"
        if open_tag in text and close_tag in text:
            return text.split(open_tag, 1)[1].rsplit(close_tag, 1)[0].strip()
    return text
