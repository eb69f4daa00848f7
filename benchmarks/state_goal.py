"""A real model's state checkpoint: does dsh read it, and does ``## Goal`` keep the first task?

    DSH_LLAMA_SERVER=/path/to/llama-server DSH_LLAMA_MODEL=/path/to/model.gguf \\
        uv run python benchmarks/state_goal.py [--threads 1] [--repeats 2]
    uv run python benchmarks/state_goal.py --url http://127.0.0.1:8080/v1   # a running server

An audit saw Qwen2.5-Coder 1.5B, as its own summariser, rewrite the state's ``## Goal`` as the
latest request (the session's first task gone from the state; the model then answered "what
was the first task?" from the state, wrongly), and answer with headings such as
``## Goal: fix it`` that dsh's state check refused as "none of its sections".

This script asks the model for the state of a few two-task conversations (the first task done,
a second one under way), in both call layouts (``riding``: the conversation as sent, then the
instruction; ``compact``: a fixed summariser prompt, the slice as text). Per layout it prints
how many answers dsh refuses as no state — with the reader that took only ``## Name`` lines as
headings (the baseline, on the same answers) and with today's (``section_heading``) — and, of
what today's reader takes, how many ``## Goal`` sections name the first task (a literal of it:
its file or function) and how many the second. Nothing is built or downloaded: without a
server binary and a GGUF file it says why and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import tempfile
from pathlib import Path

from dsh.compaction import prompts
from dsh.compaction.extractive import STATE_SECTIONS
from dsh.compaction.model_summarizer import ModelSummarizer
from dsh.compaction.recallable.state_check import check_state
from dsh.compaction.summarizer import SummaryTask
from dsh.errors import ProviderError
from dsh.events import Message, ModelSource, TextBlock, UserSource
from dsh.llm.openai_compat import OpenAICompatProvider
from real_model import start_server

MODEL = "local"
Seen = tuple[bool, bool, bool, bool]
"""One answer: its goal names the first task, names the second, dsh refuses it (no state, or
a failed call: cut off at the output limit), the strict reader would have refused it."""
SYSTEM = (
    "You are a coding agent working in the user's repository. Read before you edit, keep "
    "changes small, run the tests, and say plainly what you changed."
)


@dataclasses.dataclass(frozen=True)
class Case:
    first: str
    first_marks: tuple[str, ...]
    work: tuple[str, ...]
    second: str
    second_marks: tuple[str, ...]
    reply: str


CASES = (
    Case(
        "Fix parse_date in dates.py: it accepts 2024-02-30. It must raise ValueError.",
        ("parse_date", "dates.py"),
        (
            "Read dates.py: parse_date splits on '-' and never checks the day against the month.",
            "Edited parse_date to check calendar.monthrange; added test_rejects_feb_30.",
            "Ran pytest: 14 passed. parse_date now raises ValueError for 2024-02-30.",
        ),
        "Now add a --json flag to the report command in cli.py.",
        ("--json", "cli.py"),
        "Reading cli.py to find where the report command builds its arguments.",
    ),
    Case(
        "The cache in store/lru.py never evicts: get_or_load grows without bound. Fix it.",
        ("lru.py", "get_or_load", "evict"),
        (
            "Read store/lru.py: get_or_load inserts but the size check compares with >= 0.",
            "Fixed the size check to evict the least recently used entry over max_entries.",
            "Ran the tests: test_lru passes, memory stays flat in test_many_keys.",
        ),
        "Next, rename max_entries to capacity everywhere, keeping the old name as an alias.",
        ("capacity",),
        "Searching for max_entries: 7 uses in 4 files.",
    ),
    Case(
        "Login fails with 'token expired' right after sign-in. Find why in auth/session.py.",
        ("token expired", "session.py"),
        (
            "auth/session.py compares expires_at (UTC) with datetime.now() (local time).",
            "Changed the comparison to datetime.now(timezone.utc); added a regression test.",
            "All 31 auth tests pass; sign-in then a request works.",
        ),
        "Good. Now write a CHANGELOG entry for this fix and bump the version to 2.4.1.",
        ("CHANGELOG", "2.4.1"),
        "Opening CHANGELOG.md to add the entry under Unreleased.",
    ),
    Case(
        "Make the CSV export in export.py quote fields that contain commas.",
        ("export.py", "quote", "CSV"),
        (
            "export.py joins fields with ',' by hand; fields with commas break columns.",
            "Switched to csv.writer with QUOTE_MINIMAL; added a test with 'Smith, John'.",
            "Tests pass; the exported file opens with correct columns.",
        ),
        "Now add an --encoding option to the export command, default utf-8.",
        ("--encoding", "encoding"),
        "Looking at how the export command parses its options.",
    ),
)


def _message(id_: str, role: str, text: str) -> Message:
    source = (
        UserSource() if role == "user" else ModelSource(provider="openai-compatible", model=MODEL)
    )
    return Message(id=id_, role=role, content=(TextBlock(text=text),), source=source)  # type: ignore[arg-type]


def conversation(case: Case) -> tuple[Message, ...]:
    """The first task, its work as the model's replies, the second task and its first reply,
    then the user's latest question (the tail the state is not asked to fold)."""
    messages = [_message("m1", "user", case.first)]
    for n, text in enumerate(case.work):
        messages.append(_message(f"a{n}", "assistant", text))
        messages.append(_message(f"u{n}", "user", "Go on."))
    messages.pop()  # the last "Go on." would follow the first task's end
    messages.append(_message("m2", "user", case.second))
    messages.append(_message("a9", "assistant", case.reply))
    messages.append(_message("m3", "user", "Continue."))
    return tuple(messages)


def state_task(case: Case, layout: str) -> SummaryTask:
    """A pass with only the state part (the stubs are not what is measured), over every
    message but the last."""
    messages = conversation(case)
    folded = messages[:-1]
    part = SummaryTask(
        kind="state",
        messages=folded,
        max_tokens=300,
        system=SYSTEM,
        layout=layout,  # type: ignore[arg-type]
        conversation=messages,
        slice_range=(1, len(folded)),
    )
    if layout == "compact":
        return SummaryTask(
            kind="pass", messages=folded, max_tokens=300, layout="compact",
            parts=(dataclasses.replace(part, slice_range=(1, len(folded))),),
        )  # fmt: skip
    return SummaryTask(
        kind="pass", messages=(), max_tokens=300, system=SYSTEM, layout="riding",
        conversation=messages, parts=(part,),
    )  # fmt: skip


def strict_refuses(state: str) -> bool:
    """The reader before ``section_heading``: only a line ``## Name`` was a heading."""
    names = {name.lower() for name in STATE_SECTIONS}
    return not any(
        line.startswith("## ") and line[3:].strip().lower() in names for line in state.splitlines()
    )


def goal_of(answer: str) -> str | None:
    """The ``## Goal`` text of the state as dsh reads it (``check_state``), or None when dsh
    would refuse the answer as no state."""
    sections = prompts.split_pass_answer(answer, ("state",))
    state = sections.get("state", answer)
    try:
        checked = check_state(state, source=state, previous=None)
    except ProviderError:
        return None
    goal = checked.split("## Goal", 1)[1].split("\n## ", 1)[0]
    return " ".join(goal.split()).lower()


async def measure(url: str, repeats: int) -> dict[str, list[Seen]]:
    provider = OpenAICompatProvider("openai-compatible", MODEL, url, "none")
    summarizer = ModelSummarizer(provider, MODEL, timeout_s=900, max_output_tokens=400)
    seen: dict[str, list[Seen]] = {}
    for layout in ("riding", "compact"):
        for case in [c for c in CASES for _ in range(repeats)]:
            try:
                answer: str | None = (await summarizer.summarize(state_task(case, layout))).text
            except ProviderError as exc:  # dsh fails this call the same way
                answer = None
                print(f"  (call failed: {exc})")
            read = goal_of(answer) if answer is not None else None
            state = prompts.split_pass_answer(answer or "", ("state",)).get("state", answer or "")
            strict = answer is None or strict_refuses(state)
            if answer is not None and read is None:
                print(f"  (refused as no state: {answer[:160]!r})")
            goal = read or ""
            first = any(mark.lower() in goal for mark in case.first_marks)
            second = any(mark.lower() in goal for mark in case.second_marks)
            seen.setdefault(layout, []).append((first, second, read is None, strict))
            print(f"  {layout:7} first={first!s:5} second={second!s:5} {goal[:90]!r}", flush=True)
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2, help="answers per conversation")
    parser.add_argument("--url", help="a running server's /v1 URL (no server is started)")
    args = parser.parse_args()
    if args.url:
        report(asyncio.run(measure(args.url, args.repeats)), "the server at " + args.url)
        return 0
    binary, model = os.environ.get("DSH_LLAMA_SERVER"), os.environ.get("DSH_LLAMA_MODEL")
    if not (binary and model and Path(binary).exists() and Path(model).exists()):
        print("skipped: set DSH_LLAMA_SERVER and DSH_LLAMA_MODEL to a llama-server and a GGUF")
        return 0
    os.environ["DSH_LLAMA_EXTRA_ARGS"] = (
        f"{os.environ.get('DSH_LLAMA_EXTRA_ARGS', '')} -t {args.threads}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        process, url = start_server(Path(binary), Path(model), 8192, Path(scratch) / "server.log")
        try:
            seen = asyncio.run(measure(url, args.repeats))
        finally:
            process.terminate()
            process.wait(timeout=30)
    report(seen, Path(model).name)
    return 0


def report(seen: dict[str, list[Seen]], model: str) -> None:
    print(f"\nmodel {model}; answers per row: {len(CASES)} conversations x repeats")
    print(
        f"{'layout':8} {'refused: strict reader (baseline)':>34} {'dsh now':>8} {'ratio':>6}"
        f" {'goal keeps 1st task':>20} {'names 2nd':>10}"
    )
    for layout, rows in seen.items():
        first, second, refused, strict = (sum(r[i] for r in rows) for i in range(4))
        n = len(rows)
        ratio = f"{refused / strict:.2f}" if strict else "-"
        print(
            f"{layout:8} {strict:>31}/{n} {refused:>6}/{n} {ratio:>6}"
            f" {first:>17}/{n} {second:>7}/{n}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
