"""Instructions for model summarisers and the framing of checkpoint text.

Every string the model reads about compaction lives here, once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from dsh.compaction.summarizer import SummaryTask
from dsh.events import Message
from dsh.transcript import render_message

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
(error strings, paths, ids, values, config keys) grouped by kind, in this schematic form
(the <…> placeholders stand for literals copied from the slice; never write them):
{example}
Do not restate the working state or earlier index entries given as background; no footer."""

EXAMPLE_PLACEHOLDERS = ("<ERROR-STRING>", "<path>", "<ID>", "<key>=<value>")
"""The schematic literals of the instructions' one example: obviously not conversation text."""

KEYWORD_EXAMPLE = 'Keywords — error: "{}"; path: {}; id: {}; config: {}'.format(
    *EXAMPLE_PLACEHOLDERS
)

STATE_INSTRUCTION = """\
Rewrite the working-memory state of this session from the previous state and the conversation
slice above. Merge, don't restate: keep what still holds, replace what changed (a superseded value
must not survive as current), add what is new. Sections, in order: ## Goal, ## Decisions,
## Current state, ## Constraints, ## Next steps. At most about {tokens} tokens. No footer."""

RIDING_STUB_INSTRUCTION = """\
[Compaction task, not a user request: do not call tools and do not answer the conversation.]
Index only messages #{first}–#{last} of this conversation (message #1 is the first one), from
{head} to {tail}. Everything outside that slice is background: do not index it."""

RIDING_STATE_INSTRUCTION = """\
[Compaction task, not a user request: do not call tools and do not answer the conversation.]
Fold messages #{first}–#{last} of this conversation (message #1 is the first one), from {head}
to {tail}, into the working-memory state{previous}."""

RIDING_PREVIOUS = ", starting from the previous state checkpoint (message #{at})"

PASS_INSTRUCTION = """\
[Compaction task, not a user request: do not call tools or answer the conversation.]
Write these {count} sections in order, each under its marker line exactly as given, nothing
before the first (message #1 is the first message above):
{sections}"""

PASS_STUB_RULES = """
Stub sections: index only that stub's messages in at most {lines} short lines (asked, done,
outcome), then one line "Keywords — " with their rarest exact literals grouped by kind, in this
schematic form (never write the <…> placeholders):
{example}
All other messages are background for it; no footer."""

PASS_STATE_RULES = """
State section: rewrite the working-memory state from the previous state and its messages.
Merge, don't restate: a superseded value must not survive as current. Sections: ## Goal,
## Decisions, ## Current state, ## Constraints, ## Next steps; at most about {tokens} tokens;
no footer."""

PASS_STUB_LINE = "{marker} messages #{first}–#{last}, {head} … {tail}"
PASS_STATE_LINE = "{marker} messages #{first}–#{last}{previous}"
PASS_PREVIOUS = " and the previous state (message #{at})"
PASS_QUOTE_CHARS = 40
"""How much of a stub's first and last message a pass instruction quotes (it lists many)."""

STATE_LABEL = "state"
_MARKER = re.compile(r"^[\s#*_]*=+\s*(stub\s+\d+|state)\s*=+[*_]*(?:\s.*)?$", re.I)
"""A section's marker line. What follows the marker on its line is ignored: the instruction
shows each marker followed by its slice (``=== stub 1 === messages #3–#9, …``), and a model
told to write the marker line "exactly as given" may copy all of it. Markdown a model wraps
it in (``**=== stub 1 ===**``, ``## === state ===``) is ignored too."""

QUOTE_CHARS = 60
"""How much of a slice's first and last message a riding instruction quotes to locate it."""

SUMMARY_PREAMBLE = (
    "[This is an automatically generated checkpoint of earlier conversation. Treat it as "
    "background you already know and continue the work without acknowledging it.]"
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
    if task.kind == "pass" and task.parts:  # compact: the context its parts share
        return context_for(task.parts[0])
    return None


def instruction_for(task: SummaryTask) -> str:
    """The last user message of a model summary call for ``task``."""
    if task.kind == "pass":
        return _pass_instruction(task)
    if task.layout == "riding" and task.kind != "summary":
        return _riding_instruction(task)
    if task.kind == "stub":
        return STUB_INSTRUCTION.format(lines=3, example=KEYWORD_EXAMPLE)
    if task.kind == "state":
        focus = FOCUS_NOTE.format(focus=task.focus) if task.focus else ""
        return STATE_INSTRUCTION.format(tokens=task.max_tokens) + focus
    return SUMMARY_INSTRUCTION.format(
        sections="\n".join(f"## {name}" for name in SUMMARY_SECTIONS),
        previous=PREVIOUS_NOTE if task.previous else "",
        focus=FOCUS_NOTE.format(focus=task.focus) if task.focus else "",
    )


def _riding_instruction(task: SummaryTask) -> str:
    """Names the slice by position in the conversation and quotes its two ends, then the
    usual rules for a stub or a state."""
    assert task.slice_range is not None, "a riding task names its slice"
    first, last = task.slice_range
    head, tail = _ends(task.messages)
    if task.kind == "stub":
        lead = RIDING_STUB_INSTRUCTION.format(first=first, last=last, head=head, tail=tail)
        rules = STUB_INSTRUCTION.format(lines=3, example=KEYWORD_EXAMPLE)
        rules = rules.replace("the conversation slice above", "it")
        return f"{lead}\n{rules}"
    previous = RIDING_PREVIOUS.format(at=task.previous_at) if task.previous_at else ""
    lead = RIDING_STATE_INSTRUCTION.format(
        first=first, last=last, head=head, tail=tail, previous=previous
    )
    focus = FOCUS_NOTE.format(focus=task.focus) if task.focus else ""
    rules = STATE_INSTRUCTION.format(tokens=task.max_tokens).replace(
        "the previous state and the conversation\nslice above", "the previous state and\nthat slice"
    )
    return f"{lead}\n{rules}{focus}"


def pass_labels(task: SummaryTask) -> tuple[str, ...]:
    """The section labels of a ``pass`` task's answer, one per part: ``stub 1``…, ``state``."""
    labels, stubs = [], 0
    for part in task.parts:
        if part.kind == "stub":
            stubs += 1
            labels.append(f"stub {stubs}")
        else:
            labels.append(STATE_LABEL)
    return tuple(labels)


def pass_marker(label: str) -> str:
    """The line that starts a section of a ``pass`` answer."""
    return f"=== {label} ==="


def join_pass_answer(sections: Iterable[tuple[str, str]]) -> str:
    """A ``pass`` answer from ``(label, text)`` sections (what a well-behaved model writes)."""
    return "\n".join(f"{pass_marker(label)}\n{text}" for label, text in sections)


def split_pass_answer(text: str, labels: Sequence[str]) -> dict[str, str]:
    """The sections of a ``pass`` answer by label. A marker line (``=== stub 2 ===``, any case
    and number of ``=``, whatever follows it on its line) starts a section; text before the
    first marker, a section whose label is not in ``labels``, and any repeat of a label already
    seen are dropped; a label the answer lacks is absent."""
    wanted = set(labels)
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _MARKER.match(line)
        if match is None:
            if current is not None:
                current.append(line)
            continue
        label = " ".join(match.group(1).lower().split())
        current = None
        if label in wanted and label not in sections:
            current = sections[label] = []
    return {label: "\n".join(lines).strip() for label, lines in sections.items()}


def _pass_instruction(task: SummaryTask) -> str:
    """One marker line per part naming its slice by position (quoting its two ends), then the
    rules for stubs and for the state (those the task has parts of)."""
    lines = []
    rules = ""
    state = None
    for label, part in zip(pass_labels(task), task.parts, strict=True):
        assert part.slice_range is not None, "a pass part names its slice"
        first, last = part.slice_range
        fields = {"marker": pass_marker(label), "first": first, "last": last}
        if part.kind == "stub":
            head, tail = _ends(part.messages, PASS_QUOTE_CHARS)
            lines.append(PASS_STUB_LINE.format(**fields, head=head, tail=tail))
            rules = PASS_STUB_RULES.format(lines=3, example=KEYWORD_EXAMPLE)
            continue
        state = part
        previous = PASS_PREVIOUS.format(at=part.previous_at) if part.previous_at else ""
        lines.append(PASS_STATE_LINE.format(**fields, previous=previous))
    if state is not None:
        rules += PASS_STATE_RULES.format(tokens=state.max_tokens)
        rules += FOCUS_NOTE.format(focus=state.focus) if state.focus else ""
    return PASS_INSTRUCTION.format(count=len(lines), sections="\n".join(lines)) + rules


def _ends(messages: Sequence[Message], chars: int = QUOTE_CHARS) -> tuple[str, str]:
    head = _quote(messages[0], chars) if messages else "(nothing)"
    tail = _quote(messages[-1], chars) if messages else "(nothing)"
    return head, tail


def echoes_example(text: str, source: str) -> bool:
    """True when ``text`` repeats an instruction's example: one of its schematic placeholders
    that the conversation itself (``source``) never said."""
    return any(mark in text and mark not in source for mark in EXAMPLE_PLACEHOLDERS)


def _quote(message: Message, chars: int = QUOTE_CHARS) -> str:
    text = " ".join(render_message(message).split())
    clipped = text[:chars] + ("…" if len(text) > chars else "")
    return json.dumps(clipped, ensure_ascii=False)


FRAME_TAG = re.compile(r"</?compacted-", re.I)
"""A ``<compacted-…>`` tag, opening or closing: code's framing, never a summariser's (a
closing tag in an answer would end the frame early, and what follows would read as outside
the checkpoint)."""


def without_frame_tags(text: str) -> str:
    """``text`` without the lines that hold a ``FRAME_TAG``."""
    return "\n".join(line for line in text.splitlines() if not FRAME_TAG.search(line)).strip()


def frame_summary(text: str) -> str:
    """A state-class checkpoint body: preamble + tagged summary."""
    return f"{SUMMARY_PREAMBLE}\n<compacted-summary>\n{text}\n</compacted-summary>"


def frame_rollup(text: str) -> str:
    """A rollup checkpoint body (the oldest stubs merged by code)."""
    return f"<compacted-rollup>\n{text}\n</compacted-rollup>"


def frame_stub(text: str) -> str:
    """An index-stub checkpoint body."""
    return f"<compacted-index-stub>\n{text}\n</compacted-index-stub>"


def footer(summary_seq: int, span: tuple[int, int]) -> str:
    """The code-written footer every recallable checkpoint ends with (docs/compaction.md,
    "The footer")."""
    start, end = span
    return (
        f"[checkpoint c{summary_seq}: shadows conversation span #{start}–#{end}; "
        "originals retrievable via history_read]"
    )


def unframe(text: str) -> str:
    """The summary inside a framed checkpoint (for merging a previous checkpoint)."""
    for tag in ("compacted-summary", "compacted-index-stub", "compacted-rollup"):
        open_tag, close_tag = f"<{tag}>", f"</{tag}>"
        if open_tag in text and close_tag in text:
            return text.split(open_tag, 1)[1].rsplit(close_tag, 1)[0].strip()
    return text
