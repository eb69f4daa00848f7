"""The seeded scenario generator: same spec and seed, same bytes; facts planted where declared."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dsh.bench.generate import generate
from dsh.bench.scenario import (
    builtin_names,
    from_jsonl,
    load_spec,
    parse_spec,
    to_jsonl,
)
from dsh.errors import ConfigError

SMALL = {
    "name": "tiny",
    "description": "a tiny spec for tests",
    "turns": 6,
    "window": 4096,
    "compaction": {"retain_tokens": 600, "chunk_tokens": 400, "stub_tokens": 60},
    "project": {"package": "tiny", "modules": 3, "functions": [2, 4]},
    "facts": [
        {
            "id": "ticket",
            "anchor": "ZEBRA-7731",
            "where": "user",
            "at": 0.2,
            "distractors": ["ZEBRA-7713"],
            "paraphrases": ["keep it in mind", "bug number"],
        },
        {
            "id": "port",
            "anchor": "port = 8123",
            "where": "file",
            "path": "deploy/a.toml",
            "at": 0.4,
            "paraphrases": ["staging port"],
        },
        {
            "id": "new-port",
            "anchor": "port = 9443",
            "where": "edit",
            "path": "deploy/a.toml",
            "at": 0.8,
            "supersedes": "port",
        },
    ],
}


@pytest.mark.parametrize("name", builtin_names())
def test_every_built_in_fact_has_three_kinds_of_query(name: str) -> None:
    """Exact (the anchor), partial (a shorter literal part of it) and paraphrases that share no
    8-character substring with it (case-insensitive), carried into results.json's facts."""
    scenario = generate(load_spec(name), 7)
    for fact in scenario.facts:
        assert fact.query in fact.anchor and fact.query != fact.anchor, fact.id
        assert fact.paraphrases, fact.id
        for phrase in fact.paraphrases:
            low = phrase.lower()
            anchor = fact.anchor.lower()
            windows = {anchor[i : i + 8] for i in range(len(anchor) - 7)}
            assert not any(w in low for w in windows), (fact.id, phrase)


def test_a_paraphrase_sharing_eight_characters_with_its_anchor_is_refused() -> None:
    facts = [{**SMALL["facts"][0], "paraphrases": ["the zebra-77 ticket"]}]  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="shares 'zebra-77'"):
        parse_spec({**SMALL, "facts": facts}, source="test")
    facts = [{**SMALL["facts"][0], "query": "ZEBRA-7731"}]  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="query must be a literal part of the anchor"):
        parse_spec({**SMALL, "facts": facts}, source="test")


def test_the_built_in_scenarios_are_listed() -> None:
    assert {"bugfix-small", "refactor-medium", "migration-long", "config-churn"} <= set(
        builtin_names()
    )


@pytest.mark.parametrize("name", builtin_names())
def test_the_same_seed_gives_the_same_bytes(name: str) -> None:
    spec = load_spec(name)
    assert to_jsonl(generate(spec, 7)) == to_jsonl(generate(spec, 7))


def test_the_bytes_do_not_depend_on_the_process_hash_seed() -> None:
    code = (
        "import sys; from dsh.bench.generate import generate; "
        "from dsh.bench.scenario import load_spec, to_jsonl; "
        "sys.stdout.buffer.write(to_jsonl(generate(load_spec('bugfix-small'), 7)))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            timeout=60,
        ).stdout
        for hash_seed in ("1", "2")
    }
    assert outputs == {to_jsonl(generate(load_spec("bugfix-small"), 7))}


def test_another_seed_gives_another_session() -> None:
    spec = load_spec("bugfix-small")
    assert to_jsonl(generate(spec, 7)) != to_jsonl(generate(spec, 8))


def test_jsonl_round_trips() -> None:
    scenario = generate(load_spec("config-churn"), 3)
    data = to_jsonl(scenario)
    assert from_jsonl(data) == scenario
    assert all(json.loads(line)["kind"] for line in data.decode().splitlines())


def test_each_literal_is_planted_only_in_its_turn() -> None:
    scenario = generate(parse_spec(SMALL, source="tiny"), 1)
    texts = []
    for turn in scenario.turns:
        entries = json.dumps(turn.entries)
        shown = [
            scenario.files[p]
            for p in scenario.files
            if p in entries  # files shown by a call of this turn
        ]
        texts.append(turn.prompt + entries + "".join(shown))
    ticket = scenario.fact("ticket")
    assert [i + 1 for i, t in enumerate(texts) if "ZEBRA-7731" in t] == [ticket.turn]
    assert [i + 1 for i, t in enumerate(texts) if "ZEBRA-7713" in t] == list(
        ticket.distractor_turns
    )
    port, new = scenario.fact("port"), scenario.fact("new-port")
    # the edit quotes the old value once more, in the turn that supersedes it
    assert [i + 1 for i, t in enumerate(texts) if "port = 8123" in t] == [port.turn, new.turn]
    assert port.superseded_by == "new-port" and new.supersedes == "port"
    assert [(o.id, n.id) for o, n in scenario.supersessions()] == [("port", "new-port")]


def test_a_session_has_parallel_calls_reasoning_and_every_output_kind() -> None:
    scenario = generate(load_spec("migration-long"), 7)
    entries = scenario.entries()
    assert any(len(e.get("toolCalls", [])) > 1 for e in entries)
    assert any("reasoning" in e for e in entries)
    commands = " ".join(
        c["arguments"].get("command", "") for e in entries for c in e.get("toolCalls", [])
    )
    for folder in ("logs/pytest-", "logs/trace-", "logs/service-", "patches/"):
        assert folder in commands
    names = {c["name"] for e in entries for c in e.get("toolCalls", [])}
    assert {"read_file", "grep", "list_dir", "glob", "bash", "edit_file"} <= names
    assert "Traceback (most recent call last):" in "".join(scenario.files.values())
    assert any(p.endswith(".diff") and "\n+" in t for p, t in scenario.files.items())


def test_a_literal_that_generic_text_also_produces_is_refused() -> None:
    spec = {**SMALL, "facts": [{"id": "x", "anchor": "def ", "where": "user", "at": 0.5}]}
    with pytest.raises(ConfigError, match="appears in turns"):
        generate(parse_spec(spec, source="bad"), 1)


@pytest.mark.parametrize(
    ("facts", "message"),
    [
        (
            [
                {"id": "a", "anchor": "ZEBRA-77", "where": "user", "at": 0.1},
                {"id": "b", "anchor": "ZEBRA-7731", "where": "user", "at": 0.2},
            ],
            "substring",
        ),
        (
            [
                {"id": "a", "anchor": "x = 1", "where": "user", "at": 0.5},
                {"id": "b", "anchor": "x = 2", "where": "user", "at": 0.2, "supersedes": "a"},
            ],
            "earlier fact",
        ),
        (
            [
                {"id": "a", "anchor": "x = 1", "where": "user", "at": 0.1},
                {
                    "id": "b",
                    "anchor": "x = 2",
                    "where": "edit",
                    "path": "f.toml",
                    "at": 0.5,
                    "supersedes": "a",
                },
            ],
            "file fact",
        ),
        ([{"id": "a", "anchor": "x = 1", "where": "file", "at": 0.1}], "needs a path"),
    ],
)
def test_bad_specs_are_refused_by_name(facts: list[dict[str, object]], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_spec({**SMALL, "facts": facts}, source="bad")


def test_unknown_spec_fields_and_scenarios_are_refused() -> None:
    with pytest.raises(ConfigError, match="tunrs"):
        parse_spec({**SMALL, "tunrs": 3}, source="bad")
    with pytest.raises(ConfigError, match="unknown scenario"):
        load_spec("no-such-scenario")
