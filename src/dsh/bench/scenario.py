"""Scenario data: the YAML spec a scenario file holds, and the concrete session it generates.

A *spec* (``src/dsh/bench/scenarios/*.yaml``) describes a session in parameters — how many turns,
the context window and compaction budgets, the tool mix, how often calls run in parallel, and
the planted facts. ``dsh.bench.generate`` turns a spec and a seed into a *scenario*: the
workspace files, every user prompt, every scripted model turn (the ``scripted`` provider's
entries), and where each fact, distractor and supersession landed. A scenario serialises to
JSONL (``to_jsonl``), byte-identical for the same spec and seed, and loads back (``from_jsonl``),
so a hand-written or edited JSONL file is a scenario too. Adding a scenario needs no code.

Fact kinds (``where``):

* ``user`` / ``assistant`` / ``reasoning``: the ``say`` sentence (``{anchor}`` filled in) is
  added to the prompt, the turn's final answer, or the turn's first reasoning block;
* ``file``: a workspace file ``path`` holds the anchor line; the turn reads it with ``read_file``;
* ``test_log`` / ``stack_trace`` / ``app_log`` / ``diff``: a generated pytest log, traceback,
  service log or patch holds it; the turn shows it with ``bash`` (``cat``);
* ``edit``: the turn edits ``path`` with ``edit_file``, replacing the anchor of the fact it
  ``supersedes`` by its own (the old value is superseded from then on).

A fact with ``supersedes`` makes the other fact's anchor stale from its turn on: the old value
must never come back as current (scored by ``dsh.bench.scorers.superseded_leaks``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml  # type: ignore[import-untyped,unused-ignore]  # stubs may be absent

from dsh.bench.recall_scores import shares_substring
from dsh.config import (
    WINDOW_RULE,
    CompactionSettings,
    Settings,
    compaction_misfit,
    validate_settings,
    window_too_small,
)
from dsh.config.small_file import UnreadableFile, read_named_file
from dsh.errors import ConfigError

FactKind = Literal[
    "user", "assistant", "reasoning", "file", "test_log", "stack_trace", "app_log", "diff", "edit"
]
StepKind = Literal[
    "read_file",
    "read_window",
    "grep",
    "list_dir",
    "glob",
    "test_log",
    "stack_trace",
    "app_log",
    "diff",
]
FORMAT_VERSION = 2
"""Bumped whenever the generator's output for a given spec and seed changes."""

DEFAULT_MIX: dict[str, int] = {
    "read_file": 5,
    "read_window": 2,
    "grep": 2,
    "list_dir": 1,
    "glob": 1,
    "test_log": 2,
    "stack_trace": 1,
    "app_log": 1,
    "diff": 1,
}


class _Spec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class FactSpec(_Spec, frozen=True):
    id: str
    anchor: str
    """The exact literal: unique in the session (the generator checks it)."""
    where: FactKind
    at: float
    """Where in the session, as a share of the turns (0 < at <= 1)."""
    query: str | None = None
    """A partial ``history_search`` query: a literal fragment of the anchor, shorter than it."""
    paraphrases: tuple[str, ...] = ()
    """Queries in the words a person would use for the fact, each sharing no 8-character
    substring with the anchor (case-insensitive)."""
    question: str | None = None
    """Online handoff probe: the question whose exact answer is the anchor."""
    say: str | None = None
    """Sentence carrying the anchor (``{anchor}``) for user/assistant/reasoning/edit facts."""
    path: str | None = None
    """``file``/``edit``: the workspace file; ``diff``: the file the patch is about."""
    distractors: tuple[str, ...] = ()
    """Look-alike literals planted elsewhere in the session (never the answer)."""
    distractor_say: str | None = None
    supersedes: str | None = None
    """The id of a fact whose value this one replaces."""


class ProjectSpec(_Spec, frozen=True):
    package: str = "importer"
    modules: int = 8
    functions: tuple[int, int] = (4, 12)


class SizeSpec(_Spec, frozen=True):
    """Sizes of generated tool outputs (ranges, inclusive)."""

    test_count: tuple[int, int] = (12, 80)
    app_log_lines: tuple[int, int] = (20, 120)
    window_lines: tuple[int, int] = (20, 60)


def compaction_settings(
    name: str,
    compaction: dict[str, Any],
    backend: str,
    window: int | None,
    overrides: dict[str, Any] | None = None,
) -> CompactionSettings:
    """Validated settings from a scenario's ``[compaction]`` table, ``overrides`` over it:
    valid on their own, and (given a ``window``: the settings of a run) able to compact in
    the scenario's window."""
    try:
        settings = msgspec.convert(
            {**compaction, **(overrides or {}), "backend": backend}, CompactionSettings
        )
        validate_settings(Settings(compaction=settings))
    except msgspec.ValidationError as exc:
        raise ConfigError(f"scenario {name}: compaction: {exc}") from exc
    except ConfigError as exc:
        raise ConfigError(f"scenario {name}: {exc}") from exc
    misfit = None if window is None else compaction_misfit(settings, window)
    if misfit is not None:
        raise ConfigError(f"scenario {name}: {misfit}")
    return settings


class ScenarioSpec(_Spec, frozen=True):
    name: str
    description: str
    turns: int
    window: int
    """Context window of the scripted model (tokens)."""
    compaction: dict[str, Any] = {}
    """``[compaction]`` settings for this scenario (the backend is set per run)."""
    project: ProjectSpec = ProjectSpec()
    sizes: SizeSpec = SizeSpec()
    steps: tuple[int, int] = (1, 4)
    """Tool-calling steps per turn before the final answer."""
    parallel: float = 0.3
    """Chance that a tool step makes 2–3 calls at once."""
    reasoning: float = 0.3
    """Chance that a turn's first model entry carries reasoning."""
    mix: dict[str, int] = msgspec.field(default_factory=lambda: dict(DEFAULT_MIX))
    facts: tuple[FactSpec, ...] = ()

    def settings(self, backend: str, overrides: dict[str, Any] | None = None) -> CompactionSettings:
        """The spec's budgets as settings for ``backend``, validated (whether they fit the
        window is checked per run, on the generated ``Scenario``)."""
        return compaction_settings(self.name, self.compaction, backend, None, overrides)

    def digest(self) -> str:
        return hashlib.sha256(msgspec.json.encode(self, order="deterministic")).hexdigest()[:16]


# ---- the generated scenario ------------------------------------------------------------------


class TurnData(_Spec, frozen=True):
    prompt: str
    entries: list[dict[str, Any]]
    """Scripted model entries (``ScriptEntry`` shape): tool steps, then the final answer."""


class PlantedFact(_Spec, frozen=True):
    id: str
    anchor: str
    where: str
    turn: int
    """1-based turn the anchor was planted in."""
    query: str
    question: str
    paraphrases: tuple[str, ...] = ()
    distractors: tuple[str, ...] = ()
    distractor_turns: tuple[int, ...] = ()
    supersedes: str | None = None
    superseded_by: str | None = None


class Scenario(_Spec, frozen=True):
    name: str
    description: str
    seed: int
    spec_digest: str
    version: int
    window: int
    compaction: dict[str, Any]
    files: dict[str, str]
    turns: list[TurnData]
    facts: list[PlantedFact]

    def settings(self, backend: str, overrides: dict[str, Any] | None = None) -> CompactionSettings:
        """The compaction settings of a run with ``backend`` (``overrides`` over the spec's)."""
        return compaction_settings(self.name, self.compaction, backend, self.window, overrides)

    def entries(self) -> list[dict[str, Any]]:
        """Every scripted model entry, in call order."""
        return [entry for turn in self.turns for entry in turn.entries]

    def fact(self, fact_id: str) -> PlantedFact:
        for fact in self.facts:
            if fact.id == fact_id:
                return fact
        raise KeyError(fact_id)

    def supersessions(self) -> list[tuple[PlantedFact, PlantedFact]]:
        """(old, new) pairs: ``new`` supersedes ``old``."""
        return [(self.fact(f.supersedes), f) for f in self.facts if f.supersedes is not None]

    def current_facts(self) -> list[PlantedFact]:
        """Facts still true at the end of the session (not superseded)."""
        return [f for f in self.facts if f.superseded_by is None]


# ---- JSONL -----------------------------------------------------------------------------------


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def to_jsonl(scenario: Scenario) -> bytes:
    """One record a line: the header, every file (by path), every turn, every fact."""
    header = {
        "kind": "scenario",
        "name": scenario.name,
        "description": scenario.description,
        "seed": scenario.seed,
        "specDigest": scenario.spec_digest,
        "version": scenario.version,
        "window": scenario.window,
        "compaction": scenario.compaction,
    }
    lines = [_line(header)]
    lines += [
        _line({"kind": "file", "path": p, "content": scenario.files[p]})
        for p in sorted(scenario.files)
    ]
    for number, turn in enumerate(scenario.turns, start=1):
        lines.append(
            _line({"kind": "turn", "turn": number, "prompt": turn.prompt, "entries": turn.entries})
        )
    lines += [_line({"kind": "fact", **msgspec.to_builtins(f)}) for f in scenario.facts]
    return ("\n".join(lines) + "\n").encode("utf-8")


def from_jsonl(data: bytes | str, *, source: str = "<jsonl>") -> Scenario:
    """Load a scenario written by ``to_jsonl`` (or by hand in the same shape)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    header: dict[str, Any] | None = None
    files: dict[str, str] = {}
    turns: list[TurnData] = []
    facts: list[PlantedFact] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            kind = record.pop("kind")
            if kind == "scenario":
                header = record
            elif kind == "file":
                files[record["path"]] = record["content"]
            elif kind == "turn":
                record.pop("turn", None)
                turns.append(msgspec.convert(record, TurnData))
            elif kind == "fact":
                facts.append(msgspec.convert(record, PlantedFact))
            else:
                raise ValueError(f"unknown record kind {kind!r}")
        except (ValueError, KeyError, TypeError, msgspec.ValidationError) as exc:
            raise ConfigError(f"{source}: line {number}: {exc}") from exc
    if header is None:
        raise ConfigError(f"{source}: no scenario header line")
    return Scenario(
        name=header["name"],
        description=header.get("description", ""),
        seed=int(header.get("seed", 0)),
        spec_digest=header.get("specDigest", ""),
        version=int(header.get("version", FORMAT_VERSION)),
        window=int(header["window"]),
        compaction=dict(header.get("compaction", {})),
        files=files,
        turns=turns,
        facts=facts,
    )


# ---- finding specs ---------------------------------------------------------------------------


def builtin_dir() -> Path:
    return Path(str(resources.files("dsh.bench") / "scenarios"))


def builtin_names() -> list[str]:
    return sorted(p.stem for p in builtin_dir().glob("*.yaml"))


def iter_builtin_specs() -> Iterator[ScenarioSpec]:
    for name in builtin_names():
        yield load_spec(name)


def parse_spec(data: object, *, source: str) -> ScenarioSpec:
    try:
        spec = msgspec.convert(data, ScenarioSpec)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    validate_spec(spec, source=source)
    return spec


def load_spec(name_or_path: str | Path) -> ScenarioSpec:
    """A built-in spec by name, or a spec file (``.yaml``/``.yml``/``.json``) by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = builtin_dir() / f"{name_or_path}.yaml"
        if not path.is_file():
            names = ", ".join(builtin_names())
            raise ConfigError(f"unknown scenario {name_or_path!r}; built-in scenarios: {names}")
    try:
        raw = read_named_file(path).decode("utf-8")
        data = json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
    except UnreadableFile as exc:
        raise ConfigError(f"{path}: cannot read scenario spec: {exc.reason}") from exc
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read scenario spec: {exc}") from exc
    return parse_spec(data, source=str(path))


def validate_spec(spec: ScenarioSpec, *, source: str) -> None:
    def fail(why: str) -> None:
        raise ConfigError(f"{source}: {why}")

    if spec.turns < 2:
        fail("turns must be at least 2")
    if window_too_small(spec.window):
        fail(f"window {WINDOW_RULE} tokens")
    if not 0 <= spec.parallel <= 1 or not 0 <= spec.reasoning <= 1:
        fail("parallel and reasoning are probabilities in [0, 1]")
    low, high = spec.steps
    if not 0 <= low <= high:
        fail("steps must be [low, high] with 0 <= low <= high")
    unknown = set(spec.mix) - set(DEFAULT_MIX)
    if unknown or not any(spec.mix.values()):
        fail(f"mix: unknown step kinds {sorted(unknown)} or all weights zero")
    spec.settings("recallable")  # the budgets must be valid settings
    ids = [f.id for f in spec.facts]
    if len(set(ids)) != len(ids):
        fail("fact ids must be unique")
    literals = [f.anchor for f in spec.facts] + [d for f in spec.facts for d in f.distractors]
    for i, a in enumerate(literals):
        for j, b in enumerate(literals):
            if i != j and a in b:
                fail(f"literal {a!r} is a substring of {b!r}: every anchor must be unique")
    by_id = {f.id: f for f in spec.facts}
    for fact in spec.facts:
        if not 0 < fact.at <= 1:
            fail(f"fact {fact.id}: at must be in (0, 1]")
        if fact.query is not None and (fact.query not in fact.anchor or fact.query == fact.anchor):
            fail(f"fact {fact.id}: query must be a literal part of the anchor, shorter than it")
        for phrase in fact.paraphrases:
            shared = shares_substring(phrase, fact.anchor)
            if shared is not None or not phrase.strip():
                fail(
                    f"fact {fact.id}: paraphrase {phrase!r} shares {shared!r} with the anchor; "
                    "a paraphrase shares no 8-character substring with it"
                )
        if fact.where in ("file", "edit") and not fact.path:
            fail(f"fact {fact.id}: a {fact.where} fact needs a path")
        if fact.supersedes is not None:
            old = by_id.get(fact.supersedes)
            if old is None or old.at >= fact.at:
                fail(f"fact {fact.id}: supersedes must name an earlier fact")
        if fact.where == "edit":
            old = by_id.get(fact.supersedes or "")
            if old is None or old.where != "file" or old.path != fact.path:
                fail(f"fact {fact.id}: an edit supersedes a file fact with the same path")
