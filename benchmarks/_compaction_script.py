"""The session of ``compaction_basic.py`` and ``recallable.py``: a temporary workspace and a
seeded script of turns with 1-3 steps (small ``read_file``/``list_dir``/``glob``/``grep`` calls
on it, assistant text of a few sentences) with planted facts (``ZEBRA-7731``, ``port = 8123``,
an exact error string, a path, a config ``key = value``, a second ticket id), each appearing
exactly once in the whole session; and the scripted summaries a model summariser answers with.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.compaction.prompts import join_pass_answer
from dsh.config import CompactionSettings
from dsh.events import Event
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import Finish, ModelRequest, StreamEvent, TextDelta

# ---- the workspace ----------------------------------------------------------------------------

WORKSPACE = {
    "README.md": "# importer\n\nNightly CSV importer for the catalogue service.\n\n"
    + "".join(f"- step {i}: parse, validate, upsert batch {i}\n" for i in range(12)),
    "pyproject.toml": '[project]\nname = "importer"\nversion = "0.4.1"\n'
    'dependencies = ["httpx", "pydantic"]\n',
    "src/importer/__init__.py": '"""importer."""\n\nfrom importer.core import run, parse_row\n',
    "src/importer/core.py": "".join(
        f"def step_{i}(row: dict) -> dict:\n    row['s{i}'] = row.get('s{i}', 0) + {i}\n"
        f"    return row\n\n\n"
        for i in range(24)
    )
    + "def parse_row(line: str) -> dict:\n    return dict(zip(COLUMNS, line.split(',')))\n\n\n"
    "def run(lines):\n    return [parse_row(line) for line in lines if line.strip()]\n",
    "src/importer/util.py": "import os\n\n\ndef env(name, default=''):\n"
    "    return os.environ.get(name, default)\n\n\ndef chunks(items, size):\n"
    "    for i in range(0, len(items), size):\n        yield items[i : i + size]\n",
    "tests/test_core.py": "from importer import parse_row, run\n\n\n"
    + "".join(
        f"def test_case_{i}():\n    assert run(['a,b,{i}']) == [parse_row('a,b,{i}')]\n\n\n"
        for i in range(8)
    ),
    "docs/notes.md": "\n".join(f"- note {i}: keep the importer idempotent" for i in range(30))
    + "\n",
    # Planted files: each is read exactly once in the whole session (at its planted turn).
    "deploy/service.toml": '[service]\nname = "importer"\nport = 8123\nworkers = 3\n'
    'log_level = "info"\n',
    "logs/ingest-2231.log": "2025-04-12T02:10:01 start batch 2231\n"
    "2025-04-12T02:10:07 ChecksumError: block 0x3f2a expected 9c41e0 got 77d2b3\n"
    "2025-04-12T02:10:07 batch 2231 aborted after 1180 rows\n",
}
COMMON_FILES = sorted(name for name in WORKSPACE if not name.startswith(("deploy/", "logs/")))


@dataclass(frozen=True, slots=True)
class Fact:
    anchor: str
    """The exact literal a later ``history_search`` must find."""
    where: str
    """``user``, ``assistant`` or ``tool`` (a file read once)."""
    at: float
    """Position in the session (share of the turns)."""


FACTS = (
    Fact("ZEBRA-7731", "user", 0.02),
    Fact("port = 8123", "tool", 0.08),
    Fact("ChecksumError: block 0x3f2a expected 9c41e0 got 77d2b3", "tool", 0.15),
    Fact("src/importer/codec_v2_shim.py", "assistant", 0.30),
    Fact("max_batch_rows = 4096", "assistant", 0.50),
    Fact("KESTREL-0419", "user", 0.70),
)


def make_workspace(root: Path) -> None:
    for name, text in WORKSPACE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# ---- the script -------------------------------------------------------------------------------

FUNCS = [f"step_{i}" for i in range(24)] + ["parse_row", "run", "env", "chunks"]
SENTENCES = (
    "I read {file} and {fn} looks fine; it is only called from {file2}.",
    "The tests in tests/test_core.py cover {fn} but not the empty-input case.",
    "Next I will check how {fn} handles rows with missing columns.",
    "There is still a TODO in {file} about caching the parsed header.",
    "I will use the existing helper in src/importer/util.py rather than adding a dependency.",
    "Nothing else in the workspace refers to {fn}, so the change stays local.",
    "The batch size is read from the environment, so the defaults in {file} only matter locally.",
    "{fn} mutates its argument; callers in {file2} rely on that, so I am not changing it.",
    "I checked the docs in docs/notes.md: the importer must stay idempotent across reruns.",
    "Running the whole suite is not needed here; the change touches {fn} only.",
)
ASKS = (
    "check whether {fn} in {file} handles empty rows",
    "look at {file} and tell me what {fn} does",
    "see if anything in {file} still uses {fn}",
    "review the tests around {fn} and list what is missing",
    "find where the batch size is configured",
    "summarise what {file} is for",
)


def _fill(template: str, rng: random.Random) -> str:
    file, file2 = rng.sample(COMMON_FILES, 2)
    return template.format(fn=rng.choice(FUNCS), file=file, file2=file2)


def _assistant_text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(_fill(rng.choice(SENTENCES), rng) for _ in range(rng.randint(low, high)))


def _tool_call(rng: random.Random) -> dict[str, Any]:
    kind = rng.choices(["read", "window", "list", "glob", "grep"], weights=[6, 2, 2, 1, 1])[0]
    if kind == "read":
        return {"name": "read_file", "arguments": {"path": rng.choice(COMMON_FILES)}}
    if kind == "window":
        args = {"path": "src/importer/core.py", "offset": rng.randint(1, 100), "limit": 15}
        return {"name": "read_file", "arguments": args}
    if kind == "list":
        where = rng.choice([".", "src/importer", "tests", "docs"])
        return {"name": "list_dir", "arguments": {"path": where}}
    if kind == "glob":
        return {"name": "glob", "arguments": {"pattern": rng.choice(["**/*.py", "*.md"])}}
    return {"name": "grep", "arguments": {"pattern": rng.choice(["def run", "import os"])}}


@dataclass
class Script:
    prompts: list[str]
    entries: list[dict[str, Any]]
    planted: dict[str, int]
    """Anchor -> turn (1-based) it was planted in."""


def make_script(turns: int, seed: int) -> Script:
    """A deterministic session: turns of 1-3 steps; every step but the last calls 1-2 tools."""
    rng = random.Random(seed)
    plant_at = {max(1, round(fact.at * turns)): fact for fact in FACTS}
    prompts: list[str] = []
    entries: list[dict[str, Any]] = []
    planted: dict[str, int] = {}
    for turn in range(1, turns + 1):
        fact = plant_at.get(turn)
        prompt = f"Turn {turn}: " + _fill(rng.choice(ASKS), rng) + "."
        steps = rng.choices([1, 2, 3], weights=[2, 5, 3])[0]
        calls_per_step = [[_tool_call(rng) for _ in range(rng.randint(1, 2))] for _ in range(3)]
        final = _assistant_text(rng, 2, 6)
        if fact is not None:
            planted[fact.anchor] = turn
            if fact.where == "user":
                prompt += f" The ticket is {fact.anchor}; keep it in mind for later."
            elif fact.where == "assistant":
                final += f" Decision: {_decision(fact.anchor)}"
            else:
                path = "deploy/service.toml" if "port" in fact.anchor else "logs/ingest-2231.log"
                steps = max(steps, 2)
                calls_per_step[0] = [{"name": "read_file", "arguments": {"path": path}}]
        prompts.append(prompt)
        for step in range(1, steps):
            entry: dict[str, Any] = {"toolCalls": calls_per_step[step - 1]}
            if rng.random() < 0.6:
                entry["text"] = _assistant_text(rng, 1, 1)
            entries.append(entry)
        entries.append({"text": final})
    return Script(prompts, entries, planted)


def _decision(anchor: str) -> str:
    if "=" in anchor:
        return f"we will set {anchor} in the importer settings from now on."
    return f"the fallback lives in {anchor}; we will leave it alone."


def summary_text(settings: CompactionSettings) -> str:
    """What the scripted *model* summariser answers to every compaction call: three prose lines
    and a keyword line (a stub keeps exactly these), then state sections sized to about 3/4 of
    ``state_max_tokens`` (the state and the basic summary keep everything, capped)."""
    lines = [
        "User asked to review the importer modules and their tests.",
        "Assistant read core.py, util.py and the tests; no code was changed.",
        "Outcome: the helpers behave as documented; one TODO about header caching remains.",
        "Keywords — path: src/importer/core.py; id: parse_row",
        "## Goal",
        "- Keep the nightly importer correct and idempotent.",
        "## Decisions",
    ]
    target = settings.state_max_tokens * 3
    i = 0
    while sum(len(line) + 1 for line in lines) < target - 200:
        lines.append(f"- step_{i % 24} keeps mutating its row argument; callers rely on it ({i}).")
        i += 1
    lines += ["## Current state", "- Reviewing.", "## Constraints", "- (none)", "## Next steps"]
    lines.append("- Continue the review.")
    return "\n".join(lines)


class FollowingSummaries(ScriptedProvider):
    """The scripted conversation, and a model summariser that follows the instruction's layout
    (after ``delay_ms``): a one-call pass gets one section per marker line it names (a stub's
    lines, the state), a stub call a stub's lines, any other call all of ``text`` (a stub's
    lines, then the state's sections) — as a model that does what it is asked would."""

    def __init__(self, entries: Any, *, model: str, text: str, delay_ms: int) -> None:
        super().__init__(entries, model=model)
        lines = text.splitlines()
        cut = lines.index("## Goal")
        self.text, self.stub, self.state = text, "\n".join(lines[:cut]), "\n".join(lines[cut:])
        self.delay_ms = delay_ms

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        if request.purpose != "compaction":
            return super().stream(request, history=history)
        self.requests.append(request)
        return self._answer(request.messages[-1].text())

    async def _answer(self, instruction: str) -> AsyncIterator[StreamEvent]:
        await asyncio.sleep(self.delay_ms / 1000)
        labels = re.findall(r"^=== (stub \d+|state) ===", instruction, re.M)
        if labels:
            text = join_pass_answer((a, self.state if a == "state" else self.stub) for a in labels)
        elif "Index " in instruction:
            text = self.stub
        else:
            text = self.text
        yield TextDelta(text)
        yield Finish("stop")
