"""The seeded scenario generator: a ``ScenarioSpec`` and a seed make one concrete ``Scenario``.

Everything is drawn from one ``random.Random`` seeded with the scenario name and the seed, in a
fixed order, so the same spec and seed always give the same bytes (``to_jsonl``). The session is
a coding agent at work on a generated Python project: prompts about modules and functions, tool
steps that read files, grep, list, glob, and show test logs, stack traces, service logs and
patches (files the scenario writes into the workspace and the model shows with ``bash cat``:
the bench never runs a real test suite), parallel calls, reasoning, and final answers. Facts,
their look-alike distractors and supersessions are planted at their turns; ``_check_clean``
then proves every literal shows up in exactly the turns it was planted in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from dsh.bench import textgen
from dsh.bench.scenario import (
    FORMAT_VERSION,
    FactSpec,
    PlantedFact,
    Scenario,
    ScenarioSpec,
    TurnData,
)
from dsh.errors import ConfigError

PROMPTS = (
    "Look at {module}.py and tell me what {fn} does.",
    "The tests around {fn} are flaky; find out why.",
    "Run the tests for {module} and tell me what fails.",
    "Add a guard for an empty {noun} in {fn}.",
    "Why does {fn} log a warning on every call?",
    "Check whether anything still calls {fn}.",
    "Review the latest patch to {module}.py.",
    "Read the service log and tell me what went wrong overnight.",
    "Is {fn} safe to call twice with the same {noun}?",
    "Summarise how {module}.py and {module2}.py fit together.",
)
STEP_TEXT = (
    "Let me look at {what} first.",
    "I'll check {what} and compare.",
    "Reading {what}.",
    "Checking {what} in parallel with the rest.",
    "Next, {what}.",
)
SENTENCES = (
    "{fn} in {module}.py only touches the {noun} it is given, so the change stays local.",
    "The tests in tests/test_{module}.py cover {fn} but not the empty-{noun} case.",
    "{fn} is called from {module2}.py as well; both call sites pass limit explicitly.",
    "There is still a TODO in {module}.py about caching the parsed {noun}.",
    "I would keep {fn} as it is and add a regression test for the {noun} path.",
    "Nothing else in the project refers to {fn}.",
    "The log shows {fn} retrying the same {noun} several times before giving up.",
    "{module2}.py imports {module}.py lazily, so the import cycle is harmless.",
    "The failing assertion compares a {noun} count, not its contents.",
    "The patch only renames locals in {module}.py; behaviour is unchanged.",
)
REASONING = (
    "The user wants to know about {fn}. It lives in {module}.py and the tests are in "
    "tests/test_{module}.py; I should read both before answering, and check the log if a "
    "test fails."
)
DEFAULT_SAY = {
    "user": "Note: {anchor} — keep it in mind for later.",
    "assistant": "Noted for later: {anchor}.",
    "reasoning": "I should remember {anchor} for later.",
    "edit": "Updated the file: {anchor} is the value from now on.",
}
DEFAULT_DISTRACTOR_SAY = "For comparison, {anchor} came up in an older, unrelated thread."


@dataclass
class _Project:
    package: str
    modules: list[str]
    functions: dict[str, list[str]]
    files: dict[str, str]

    def module_path(self, module: str) -> str:
        return f"src/{self.package}/{module}.py"


@dataclass
class _Turn:
    prompt: str
    steps: list[list[dict[str, Any]]]
    step_texts: list[str | None]
    reasoning: str | None
    final: str
    shown: set[str] = field(default_factory=set)
    """Workspace files whose content this turn shows (for the cleanliness check)."""


class _Generator:
    def __init__(self, spec: ScenarioSpec, seed: int) -> None:
        self.spec = spec
        self.seed = seed
        self.rng = random.Random(f"dsh-bench:{spec.name}:{seed}")
        self.counters: dict[str, int] = {}
        self.project = self._project()

    # ---- workspace ----------------------------------------------------------------------------

    def _project(self) -> _Project:
        rng, spec = self.rng, self.spec.project
        modules = rng.sample(textgen.MODULES, min(spec.modules, len(textgen.MODULES)))
        files: dict[str, str] = {}
        functions: dict[str, list[str]] = {}
        for module in modules:
            text = textgen.python_module(rng, spec.package, module, rng.randint(*spec.functions))
            files[f"src/{spec.package}/{module}.py"] = text
            functions[module] = textgen.module_functions(text)
            files[f"tests/test_{module}.py"] = textgen.test_module(
                rng, spec.package, module, functions[module]
            )
        files[f"src/{spec.package}/__init__.py"] = f'"""{spec.package}."""\n'
        files["README.md"] = f"# {spec.package}\n\n" + "".join(
            f"- `{m}`: {rng.choice(textgen.VERBS)}s {rng.choice(textgen.NOUNS)}s\n" for m in modules
        )
        files["pyproject.toml"] = (
            f'[project]\nname = "{spec.package}"\nversion = "0.{rng.randint(1, 9)}.0"\n'
        )
        return _Project(spec.package, modules, functions, files)

    def _count(self, kind: str) -> int:
        self.counters[kind] = self.counters.get(kind, 0) + 1
        return self.counters[kind]

    def _new_file(self, kind: str, suffix: str, text: str) -> str:
        number = self._count(kind)
        path = (
            f"logs/{kind}-{number:03d}{suffix}" if kind != "patch" else f"patches/{number:04d}.diff"
        )
        self.project.files[path] = text
        return path

    # ---- one tool call --------------------------------------------------------------------------

    def _pick(self) -> tuple[str, str, str]:
        module = self.rng.choice(self.project.modules)
        return (
            module,
            self.rng.choice(self.project.functions[module]),
            self.rng.choice(textgen.NOUNS),
        )

    def _call(self, kind: str, turn: _Turn, extra: str | None = None) -> dict[str, Any]:
        """One tool call of ``kind``; ``extra`` is a literal the shown output must contain."""
        rng, project, sizes = self.rng, self.project, self.spec.sizes
        module, _, _ = self._pick()
        if kind == "read_file":
            path = rng.choice([project.module_path(module), f"tests/test_{module}.py"])
            turn.shown.add(path)
            return {"name": "read_file", "arguments": {"path": path}}
        if kind == "read_window":
            path = project.module_path(module)
            lines = project.files[path].count("\n")
            size = rng.randint(*sizes.window_lines)
            offset = rng.randint(1, max(1, lines - size))
            turn.shown.add(path)
            return {
                "name": "read_file",
                "arguments": {"path": path, "offset": offset, "limit": size},
            }
        if kind == "grep":
            pattern = f"def {rng.choice(textgen.VERBS)}_"
            turn.shown.update(p for p in project.files if p.startswith(f"src/{project.package}/"))
            return {
                "name": "grep",
                "arguments": {"pattern": pattern, "path": f"src/{project.package}"},
            }
        if kind == "list_dir":
            return {
                "name": "list_dir",
                "arguments": {"path": rng.choice([".", f"src/{project.package}", "tests"])},
            }
        if kind == "glob":
            return {
                "name": "glob",
                "arguments": {"pattern": rng.choice(["**/*.py", "tests/*.py", "*.md"])},
            }
        path = self._shown_file(kind, module, extra)
        turn.shown.add(path)
        return {"name": "bash", "arguments": {"command": f"cat {path}"}}

    def _shown_file(self, kind: str, module: str, extra: str | None) -> str:
        """Write the file a ``bash cat`` step shows (a log, trace or patch); returns its path."""
        rng, project, sizes = self.rng, self.project, self.spec.sizes
        if kind == "test_log":
            failure = (
                extra
                if extra is not None
                else (textgen.generic_error(rng) if rng.random() < 0.5 else None)
            )
            text = textgen.pytest_log(
                rng,
                project.package,
                project.modules,
                tests=rng.randint(*sizes.test_count),
                failure=failure,
            )
            path = self._new_file("pytest", ".log", text)
        elif kind == "stack_trace":
            path = self._new_file(
                "trace",
                ".txt",
                textgen.traceback_text(rng, project.package, project.modules, extra),
            )
        elif kind == "app_log":
            lines = rng.randint(*sizes.app_log_lines)
            path = self._new_file(
                "service", ".log", textgen.app_log(rng, project.package, lines=lines, extra=extra)
            )
        elif kind == "diff":
            source = project.module_path(module)
            text = textgen.unified_diff(rng, source, project.files[source], added=extra)
            path = self._new_file("patch", "", text)
        else:
            raise ConfigError(f"scenario {self.spec.name}: unknown step kind {kind!r}")
        return path

    def _fill(self, template: str) -> str:
        module, fn, noun = self._pick()
        module2 = self.rng.choice(self.project.modules)
        return template.format(module=module, module2=module2, fn=fn, noun=noun, what="{what}")

    # ---- turns --------------------------------------------------------------------------------

    def _turn(self) -> _Turn:
        rng, spec = self.rng, self.spec
        kinds = [k for k, w in spec.mix.items() if w > 0]
        weights = [spec.mix[k] for k in kinds]
        turn = _Turn(
            prompt=self._fill(rng.choice(PROMPTS)),
            steps=[],
            step_texts=[],
            reasoning=self._fill(REASONING) if rng.random() < spec.reasoning else None,
            final=" ".join(self._fill(rng.choice(SENTENCES)) for _ in range(rng.randint(2, 5))),
        )
        for _ in range(rng.randint(*spec.steps)):
            count = rng.randint(2, 3) if rng.random() < spec.parallel else 1
            calls = [self._call(k, turn) for k in rng.choices(kinds, weights, k=count)]
            turn.steps.append(calls)
            text = None
            if rng.random() < 0.6:
                what = ", ".join(_describe(c) for c in calls)
                text = rng.choice(STEP_TEXT).replace("{what}", what)
            turn.step_texts.append(text)
        return turn

    def _plant(self, turn: _Turn, fact: FactSpec, literal: str, *, distractor: bool) -> None:
        """Put ``literal`` (the fact's anchor, or one of its distractors) into ``turn``."""
        where = fact.where
        if distractor and where == "edit":
            where = "assistant"
        if where in ("user", "assistant", "reasoning", "edit"):
            template = (
                (fact.distractor_say or DEFAULT_DISTRACTOR_SAY)
                if distractor
                else (fact.say or DEFAULT_SAY[where])
            )
            sentence = template.replace("{anchor}", literal).replace("{path}", fact.path or "")
            if where == "user":
                turn.prompt += " " + sentence
            elif where == "assistant":
                turn.final += " " + sentence
            elif where == "reasoning":
                turn.reasoning = (turn.reasoning + " " if turn.reasoning else "") + sentence
            else:
                old = self.spec_fact(fact.supersedes or "").anchor
                call = {
                    "name": "edit_file",
                    "arguments": {"path": fact.path, "old": old, "new": literal},
                }
                turn.steps.append([call])
                turn.step_texts.append(f"Changing {fact.path}.")
                turn.final += " " + sentence
            return
        if where == "file":
            assert fact.path is not None
            path = fact.path if not distractor else _variant(fact.path, self._count("variant"))
            if path.endswith(".py"):
                text = (
                    textgen.python_module(self.rng, self.project.package, "settings", 3)
                    + f"\n{literal}\n"
                )
            else:
                stem = path.rsplit("/", 1)[-1].split(".")[0]
                text = textgen.config_file(self.rng, stem, [literal])
            self.project.files[path] = text
            turn.shown.add(path)
            call = {"name": "read_file", "arguments": {"path": path}}
        else:
            call = self._call(where, turn, extra=literal)
        if turn.steps:
            turn.steps[0].insert(0, call)
        else:
            turn.steps.append([call])
            turn.step_texts.append(None)

    def spec_fact(self, fact_id: str) -> FactSpec:
        return next(f for f in self.spec.facts if f.id == fact_id)

    # ---- the whole session ------------------------------------------------------------------

    def generate(self) -> Scenario:
        spec, rng = self.spec, self.rng
        total = spec.turns
        fact_turn: dict[str, int] = {}
        taken: set[int] = set()
        for fact in sorted(spec.facts, key=lambda f: (f.at, f.id)):
            turn = min(total, max(1, round(fact.at * total)))
            while turn in taken and len(taken) < total:
                turn = turn % total + 1
            taken.add(turn)
            fact_turn[fact.id] = turn
        plants: dict[int, list[tuple[FactSpec, str, bool]]] = {}
        distractor_turns: dict[str, list[int]] = {}
        for fact in spec.facts:
            plants.setdefault(fact_turn[fact.id], []).append((fact, fact.anchor, False))
            for literal in fact.distractors:
                choices = [t for t in range(1, total + 1) if t not in taken] or list(
                    range(1, total + 1)
                )
                turn = rng.choice(choices)
                taken.add(turn)
                distractor_turns.setdefault(fact.id, []).append(turn)
                plants.setdefault(turn, []).append((fact, literal, True))
        turns: list[_Turn] = []
        for number in range(1, total + 1):
            made = self._turn()
            for fact, literal, distractor in plants.get(number, []):
                self._plant(made, fact, literal, distractor=distractor)
            turns.append(made)
        superseded_by = {f.supersedes: f.id for f in spec.facts if f.supersedes}
        facts = [
            PlantedFact(
                id=f.id,
                anchor=f.anchor,
                where=f.where,
                turn=fact_turn[f.id],
                query=f.query or f.anchor[: max(4, len(f.anchor) // 2)],
                question=f.question or f"What is the exact value recorded as {f.id!r}?",
                paraphrases=f.paraphrases,
                distractors=f.distractors,
                distractor_turns=tuple(distractor_turns.get(f.id, ())),
                supersedes=f.supersedes,
                superseded_by=superseded_by.get(f.id),
            )
            for f in spec.facts
        ]
        data = [_turn_data(t) for t in turns]
        self._check_clean(turns, data, facts)
        return Scenario(
            name=spec.name,
            description=spec.description,
            seed=self.seed,
            spec_digest=spec.digest(),
            version=FORMAT_VERSION,
            window=spec.window,
            compaction=dict(spec.compaction),
            files=dict(sorted(self.project.files.items())),
            turns=data,
            facts=facts,
        )

    def _check_clean(
        self, turns: list[_Turn], data: list[TurnData], facts: list[PlantedFact]
    ) -> None:
        """Every anchor and distractor appears in exactly the turns it was planted in."""
        import json

        texts = []
        for turn, turn_data in zip(turns, data, strict=True):
            shown = "\n".join(
                self.project.files[p] for p in sorted(turn.shown) if p in self.project.files
            )
            texts.append(
                turn_data.prompt + json.dumps(turn_data.entries, ensure_ascii=False) + shown
            )
        for fact in facts:
            expected = {fact.anchor: {fact.turn}}
            for literal, turn_number in zip(fact.distractors, fact.distractor_turns, strict=True):
                expected.setdefault(literal, set()).add(turn_number)
            for literal, where in expected.items():
                found = {i + 1 for i, text in enumerate(texts) if literal in text}
                if literal == fact.anchor and fact.superseded_by:  # an edit quotes the old value
                    newer = next(f for f in facts if f.id == fact.superseded_by)
                    if newer.where == "edit":
                        where = where | {newer.turn}
                if found != where:
                    raise ConfigError(
                        f"scenario {self.spec.name} (seed {self.seed}): literal {literal!r} "
                        f"appears in turns {sorted(found)}, planted in {sorted(where)}"
                    )


def _describe(call: dict[str, Any]) -> str:
    args = call["arguments"]
    for key in ("path", "pattern", "command"):
        if key in args:
            value = str(args[key])
            return value[4:] if value.startswith("cat ") else value
    return str(call["name"])


def _variant(path: str, salt: int) -> str:
    head, _, name = path.rpartition("/")
    stem, dot, suffix = name.partition(".")
    variant = f"{stem}.staging{salt if salt > 1 else ''}{dot}{suffix}"
    return f"{head}/{variant}" if head else variant


def _turn_data(turn: _Turn) -> TurnData:
    entries: list[dict[str, Any]] = []
    for calls, text in zip(turn.steps, turn.step_texts, strict=True):
        entry: dict[str, Any] = {"toolCalls": calls}
        if text:
            entry["text"] = text
        entries.append(entry)
    entries.append({"text": turn.final})
    if turn.reasoning:
        entries[0] = {"reasoning": turn.reasoning, **entries[0]}
    return TurnData(prompt=turn.prompt, entries=entries)


def generate(spec: ScenarioSpec, seed: int) -> Scenario:
    """The concrete scenario for ``spec`` and ``seed`` (deterministic)."""
    return _Generator(spec, seed).generate()
