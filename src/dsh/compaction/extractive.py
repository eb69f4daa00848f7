"""The extractive summariser: checkpoints written by code, keyless and deterministic.

It answers the three task kinds of ``dsh.compaction.summarizer`` from the rendered messages
alone: first and last lines, sentences that carry decisions or constraints, and the literal
anchors of ``dsh.compaction.anchors`` copied exactly. The same task always gives the same bytes
(docs/architecture.md, "Keyless everything"; docs/compaction.md, "Known limits").
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dsh.compaction import extractive_text as et
from dsh.compaction.anchors import (
    KINDS,
    extract_anchors,
    keyword_line,
    rarest_anchors,
    split_config,
)
from dsh.compaction.prompts import SUMMARY_SECTIONS, join_pass_answer, pass_labels
from dsh.compaction.summarizer import SummaryOutput, SummaryTask
from dsh.events import Message, ToolResultBlock, is_compact_checkpoint_source
from dsh.transcript import render_message

PROVIDER = "extractive"
NOTHING = "(nothing to summarise)"
NONE = "(none)"
ANSWERED = "None open: the last request was answered."
"""The state's Next steps when its slice ends with the answer to its last request."""

STATE_SECTIONS = ("Goal", "Decisions", "Current state", "Constraints", "Next steps")

STUB_LINE_CHARS = 120
FOCUS_CHARS = 400

# Where the bullets of a previous checkpoint go, by lower-cased heading; "" is the text before
# any heading and "*" every heading not listed.
_SUMMARY_HOME = {name.lower(): name for name in SUMMARY_SECTIONS} | {
    "": "Key technical facts",
    "*": "Key technical facts",
}
_STATE_HOME = {name.lower(): name for name in STATE_SECTIONS} | {
    "request and intent": "Goal",
    "pending work": "Next steps",
    "next step": "Next steps",
    "": "Decisions",
    "*": "Decisions",
}
_REPLACED = frozenset({"Current state", "Next step", "Next steps"})
"""Sections whose previous bullets give way when the messages provide new ones."""

_PATH_BULLET = re.compile(r"^(?P<path>\S+)(?: \((?P<tools>[^()]*)\))?$")
_FIX = re.compile(r"\b(?:fix|fixed|fixes|resolved|solved|patched)\b", re.I)
_PENDING = re.compile(
    r"\b(?:TODO|FIXME|still needs?|remaining|pending|not yet|left to do|follow-up)\b", re.I
)
_DECISION = re.compile(
    r"\b(?:decided|decide|will|use|using|chose|choose|chosen|switch|switched|going with"
    r"|instead|opted|prefer)\b",
    re.I,
)
_CONSTRAINT = re.compile(
    r"\b(?:must|never|always|don't|do not|only|should not|shouldn't|cannot|can't)\b", re.I
)


class ExtractiveSummarizer:
    """A ``Summarizer`` that writes every checkpoint with code: no key, no network, no model."""

    def __init__(self, *, name: str = "extractive", model: str = "extractive") -> None:
        self.name = name
        self.model = model

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        """Answer ``task``; never raises for a well-formed task. Written in a worker thread (a
        pass's text is O(its span)), so the event loop keeps serving meanwhile."""
        text = await asyncio.to_thread(write_extractive, task)
        return SummaryOutput(text=text, provider=PROVIDER, model=self.model)


def write_extractive(task: SummaryTask) -> str:
    """The checkpoint text for ``task``: a pure function of the task."""
    if task.kind == "pass":  # every part, in its labelled section
        return join_pass_answer(
            zip(pass_labels(task), (write_extractive(p) for p in task.parts), strict=True)
        )
    if task.kind == "stub":
        return _stub(task)
    if task.kind == "state":
        return _state(task)
    return _summary(task)


# ---- text helpers ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Bullet:
    text: str
    age: int
    """Lower is older; the budget drops the oldest first."""
    focus: bool = False


@dataclass(slots=True)
class _Section:
    heading: str
    bullets: list[_Bullet]


def _material(messages: Iterable[Message]) -> list[Message]:
    """The messages to summarise: checkpoints are merged through ``previous``, not re-read."""
    return [m for m in messages if not is_compact_checkpoint_source(m.source)]


def _previous(task: SummaryTask) -> str | None:
    """``task.previous``, else the unframed text of the last checkpoint inside the slice."""
    if task.previous:
        return task.previous
    texts = [m.text() for m in task.messages if is_compact_checkpoint_source(m.source)]
    if not texts:
        return None
    text = texts[-1]
    if "<compacted-summary>" in text and "</compacted-summary>" in text:
        text = text.split("<compacted-summary>", 1)[1].rsplit("</compacted-summary>", 1)[0]
    return text


# ---- merging with the previous checkpoint ---------------------------------------------------


def parse_sections(text: str) -> dict[str, list[str]]:
    """The bullets of a Markdown checkpoint by lower-cased ``## `` heading ("" before any).

    Bullet marks, ``(none)``, framing tags and bracketed lines (preambles, footers) are dropped.
    """
    sections: dict[str, list[str]] = {}
    heading = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("## "):
            heading = line[3:].strip().lower()
            sections.setdefault(heading, [])
            continue
        line = et.BULLET_MARK.sub("", line).strip()
        framing = (line.startswith("<") and line.endswith(">")) or (
            line.startswith("[") and line.endswith("]")
        )
        if line and line != NONE and not line.startswith("#") and not framing:
            sections.setdefault(heading, []).append(line)
    return sections


def _merge(
    names: Sequence[str],
    homes: dict[str, str],
    previous: str | None,
    new: dict[str, list[_Bullet]],
    focus_words: Sequence[str],
) -> list[_Section]:
    """Per section: previous bullets (older) then new ones, each text once, focus first."""
    old: dict[str, list[str]] = {name: [] for name in names}
    for heading, lines in parse_sections(previous or "").items():
        if heading != "focus":
            old[homes.get(heading, homes["*"])].extend(lines)
    sections = []
    for name in names:
        fresh = new.get(name, [])
        kept = [] if name in _REPLACED and fresh else old[name]
        bullets = [
            _Bullet(text, i - len(kept), et.mentions(text, focus_words))
            for i, text in enumerate(kept)
        ]
        bullets = _unique([*bullets, *fresh])
        if name == "Files and code":
            bullets = _merge_paths(bullets)
        bullets.sort(key=lambda b: not b.focus)  # stable: focus first, otherwise unchanged
        sections.append(_Section(name, bullets))
    return sections


def _unique(bullets: Iterable[_Bullet]) -> list[_Bullet]:
    seen: set[str] = set()
    result = []
    for bullet in bullets:
        if bullet.text not in seen:
            seen.add(bullet.text)
            result.append(bullet)
    return result


def _merge_paths(bullets: list[_Bullet]) -> list[_Bullet]:
    """One bullet per path, at its oldest place, naming every tool that touched it."""
    order: list[_Bullet | str] = []  # bullets that name no path, and paths in first-seen order
    first: dict[str, _Bullet] = {}
    tools: dict[str, list[str]] = {}
    for bullet in bullets:
        match = _PATH_BULLET.match(bullet.text)
        if match is None:
            order.append(bullet)
            continue
        path = match.group("path")
        if path not in first:
            first[path] = bullet
            order.append(path)
        names = tools.setdefault(path, [])
        for name in (match.group("tools") or "").split(", "):
            if name and name not in names:
                names.append(name)
    result = []
    for item in order:
        if isinstance(item, _Bullet):
            result.append(item)
            continue
        text = f"{item} ({', '.join(tools[item])})" if tools[item] else item
        result.append(_Bullet(text, first[item].age, first[item].focus))
    return result


def _drop_superseded(sections: list[_Section], texts: Sequence[str]) -> None:
    """Remove bullets stating a config value that a newer ``key = value`` replaced.

    The newest value of a key is its last one in ``texts`` (the messages, in order), else its
    newest one among the bullets.
    """
    latest: dict[str, str] = {}
    bullets = sorted((b for s in sections for b in s.bullets), key=lambda b: b.age)
    for text in [*(b.text for b in bullets), *texts]:
        latest.update(_configs(text))
    for section in sections:
        section.bullets = [
            b
            for b in section.bullets
            if all(latest[key] == value for key, value in _configs(b.text).items())
        ]


def _drop_reversed_decisions(sections: list[_Section]) -> None:
    """Remove the decisions a later one reverses (``extractive_text.reversed_decisions``)."""
    for section in sections:
        if section.heading == "Decisions":
            bullets = sorted(section.bullets, key=lambda b: b.age)
            gone = {bullets[i].text for i in et.reversed_decisions([b.text for b in bullets])}
            section.bullets = [b for b in section.bullets if b.text not in gone]


def _configs(text: str) -> dict[str, str]:
    """``key -> value`` of the config anchors in ``text`` (our ``id: …`` labels excluded)."""
    pairs: dict[str, str] = {}
    for anchor in extract_anchors(text, kinds=("config",)):
        parts = split_config(anchor.text)
        if parts is not None and parts[0] not in KINDS:
            pairs[parts[0]] = parts[1]
    return pairs


# ---- layout and budget ----------------------------------------------------------------------


def _render(sections: Sequence[_Section], lead: str = "") -> str:
    blocks = [lead] if lead else []
    for section in sections:
        body = "\n".join(f"- {b.text}" for b in section.bullets) if section.bullets else NONE
        blocks.append(f"## {section.heading}\n{body}")
    return "\n\n".join(blocks)


def _fit(sections: list[_Section], max_chars: int, lead: str = "") -> None:
    """Drop bullets until the document fits ``max_chars``: always from the longest section,
    non-focus bullets before focus ones, oldest first. Headings are never dropped."""
    sizes = [len(_render([s])) for s in sections]
    total = len(_render(sections, lead))
    queues = [sorted(s.bullets, key=lambda b: (b.focus, b.age)) for s in sections]
    dropped = [0 for _ in sections]
    while total > max_chars:
        candidates = [i for i, queue in enumerate(queues) if dropped[i] < len(queue)]
        if not candidates:
            break
        index = max(candidates, key=lambda i: (sizes[i], -i))
        victim = queues[index][dropped[index]]
        dropped[index] += 1
        if dropped[index] == len(queues[index]):
            shrink = sizes[index] - len(_render([_Section(sections[index].heading, [])]))
        else:
            shrink = len(victim.text) + 3  # "- " and a newline
        sizes[index] -= shrink
        total -= shrink
    for section, queue, count in zip(sections, queues, dropped, strict=True):
        gone = {id(bullet) for bullet in queue[:count]}
        section.bullets = [b for b in section.bullets if id(b) not in gone]


def _bullets(items: Sequence[tuple[str, str]], focus_words: Sequence[str]) -> list[_Bullet]:
    """(bullet text, source text) pairs to bullets, in order, focus marked by either text."""
    return [
        _Bullet(text, age, et.mentions(text, focus_words) or et.mentions(source, focus_words))
        for age, (text, source) in enumerate(items)
    ]


# ---- summary --------------------------------------------------------------------------------


def _summary(task: SummaryTask) -> str:
    material = _material(task.messages)
    previous = _previous(task)
    if not material and not previous:
        return NOTHING
    texts = [render_message(m) for m in material]
    found: dict[str, list[tuple[str, str]]] = {name: [] for name in SUMMARY_SECTIONS}
    tools = et.tool_names(material)
    path_tools = _path_tools(material)
    for message, text in zip(material, texts, strict=True):
        _summary_items(message, text, tools, path_tools, found)
    replies = et.replies(material)
    if replies and et.sentences(replies[-1]):
        found["Current state"].append((et.clip(et.sentences(replies[-1])[0]), replies[-1]))
    prompts = et.prompts(material)
    if prompts:
        found["Next step"].append((et.clip(et.first_line(prompts[-1])), prompts[-1]))
    words = et.focus_words(task.focus)
    new = {name: _bullets(items, words) for name, items in found.items()}
    sections = _merge(SUMMARY_SECTIONS, _SUMMARY_HOME, previous, new, words)
    _drop_superseded(sections, texts)
    lead = f"## Focus\n{et.clip(task.focus, FOCUS_CHARS)}" if task.focus else ""
    _fit(sections, task.max_tokens * 4, lead)
    return _render(sections, lead)


def _summary_items(
    message: Message,
    text: str,
    tools: set[str],
    path_tools: dict[str, list[str]],
    found: dict[str, list[tuple[str, str]]],
) -> None:
    """Add the (bullet, source) pairs one message contributes, by section."""
    if et.is_prompt(message):
        found["Request and intent"].append((et.clip(et.first_line(message.text())), text))
    for anchor in et.anchors(text, tools):
        if anchor.kind == "config":
            found["Key technical facts"].append((anchor.text, text))
        elif anchor.kind in ("value", "id"):
            found["Key technical facts"].append((f"{anchor.kind}: {anchor.text}", text))
        elif anchor.kind == "path":
            names = path_tools.get(anchor.text)
            bullet = f"{anchor.text} ({', '.join(names)})" if names else anchor.text
            found["Files and code"].append((bullet, text))
        elif anchor.kind == "error":
            found["Errors and fixes"].append((et.line_of(text, anchor.text), text))
    for block in message.content:
        if isinstance(block, ToolResultBlock) and block.is_error:
            first = et.first_line("".join(inner.text for inner in block.content))
            if first and not extract_anchors(first):
                found["Errors and fixes"].append((et.clip(f"Tool error: {first}"), text))
    if message.role == "assistant":
        for sentence in et.sentences(message.text()):
            if _FIX.search(sentence):
                found["Errors and fixes"].append((et.clip(f"Fix: {sentence}"), text))
            if _PENDING.search(sentence):
                found["Pending work"].append((et.clip(sentence), text))


def _path_tools(material: Sequence[Message]) -> dict[str, list[str]]:
    """Path -> the tools whose call arguments named it, in call order."""
    result: dict[str, list[str]] = {}
    for message in material:
        for call in message.tool_calls():
            for anchor in extract_anchors(call.arguments):
                if anchor.kind != "path":
                    continue
                names = result.setdefault(anchor.text, [])
                if call.name not in names:
                    names.append(call.name)
    return result


# ---- stub -----------------------------------------------------------------------------------


def _stub(task: SummaryTask) -> str:
    """2–3 lines of what happened, then one keyword line of the slice's rarest literals.

    ``task.background``, ``task.keyword_lines`` and ``task.recent_stubs`` are context for model
    summarisers; nothing of them is copied here.
    """
    material = _material(task.messages)
    if not material:
        return NOTHING
    slice_text = "\n\n".join(render_message(m) for m in material)
    budget = max(task.max_tokens, 1) * 4
    line_chars = min(STUB_LINE_CHARS, max(40, budget // 6))
    lines = [et.clip(line, line_chars) for line in _stub_lines(material)]
    tools = et.tool_names(material)
    ranked = rarest_anchors(slice_text, task.corpus, limit=12 + len(tools), counts=task.rarity)
    anchors = [a for a in ranked if not (a.kind == "id" and a.text in tools)][:12]
    while True:
        room = budget - sum(len(line) + 1 for line in lines)
        keywords = keyword_line(anchors, max_chars=min(400, room))
        if keywords or not anchors or len(lines) <= 1:
            break
        lines.pop()  # a budget too small for every line: the keyword line matters more
    return "\n".join([*lines, keywords] if keywords else lines)


def _stub_lines(material: Sequence[Message]) -> list[str]:
    lines = []
    prompts = et.prompts(material)
    if prompts:
        more = f" (+{len(prompts) - 1} more)" if len(prompts) > 1 else ""
        lines.append(f"User asked: {et.first_line(prompts[0])}{more}")
    counts: dict[str, int] = {}
    for message in material:
        for call in message.tool_calls():
            counts[call.name] = counts.get(call.name, 0) + 1
    parts = []
    if counts:
        total = sum(counts.values())
        names = ", ".join(f"{name}×{n}" if n > 1 else name for name, n in counts.items())
        parts.append(f"{total} tool call{'s' if total > 1 else ''} ({names})")
    replies = et.replies(material)
    if replies and et.first_line(replies[-1]):
        parts.append(et.first_line(replies[-1]))
    if parts:
        lines.append("Assistant: " + "; ".join(parts))
    results = [b for m in material for b in m.content if isinstance(b, ToolResultBlock)]
    if results:
        first = et.first_line("".join(inner.text for inner in results[-1].content)) or "(empty)"
        lines.append(f"Outcome: {'error: ' if results[-1].is_error else ''}{first}")
    return lines or ["(no text)"]


# ---- state ----------------------------------------------------------------------------------


def _state(task: SummaryTask) -> str:
    material = _material(task.messages)
    previous = _previous(task)
    if not material and not previous:
        return NOTHING
    texts = [render_message(m) for m in material]
    prompts = et.prompts(material)
    replies = et.replies(material)
    found: dict[str, list[str]] = {name: [] for name in STATE_SECTIONS}
    if prompts and not parse_sections(previous or "").get("goal"):
        found["Goal"].append(et.clip(et.first_line(prompts[0])))
    for message in material:
        is_user = et.is_prompt(message)
        pattern = _CONSTRAINT if is_user else _DECISION
        for sentence in (
            et.sentences(message.text()) if message.role == "assistant" or is_user else []
        ):
            if pattern.search(sentence):
                found["Constraints" if is_user else "Decisions"].append(et.clip(sentence))
    found["Decisions"].extend(_settings(texts))
    if replies:
        lines = et.said_lines(replies[-1])[:3]
        found["Current state"].extend(et.clip(line) for line in lines)
    if _answered(material):
        found["Next steps"].append(ANSWERED)
    elif prompts:
        found["Next steps"].append(et.clip(et.first_line(prompts[-1])))
    new = {
        name: [_Bullet(text, age) for age, text in enumerate(dict.fromkeys(items))]
        for name, items in found.items()
    }
    sections = _merge(STATE_SECTIONS, _STATE_HOME, previous, new, [])
    _drop_superseded(sections, texts)
    _drop_reversed_decisions(sections)
    _fit(sections, task.max_tokens * 4)
    return _render(sections)


def _answered(material: Sequence[Message]) -> bool:
    """True when ``material`` ends with a final answer: its last assistant message has text
    and no tool call, and no request came after it. Listing an answered request under Next
    steps made a small model (Qwen2.5-Coder 1.5B) answer it again instead of the prompt that
    followed the state."""
    for message in reversed(material):
        if et.is_prompt(message):
            return False
        if message.role == "assistant":
            return bool(message.text().strip()) and not message.tool_calls()
    return False


def _settings(texts: Sequence[str]) -> list[str]:
    """The ``key = value`` literal of each config key at its newest value, newest last."""
    latest: dict[str, str] = {}
    for text in texts:
        for anchor in extract_anchors(text, kinds=("config",)):
            parts = split_config(anchor.text)
            if parts is not None:
                latest.pop(parts[0], None)
                latest[parts[0]] = anchor.text
    return list(latest.values())
