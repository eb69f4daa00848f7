"""The typed run records (``dsh.bench.results``): their JSON form round-trips exactly, for real
runs of every kind and for any record hypothesis builds from the struct definitions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.bench.results import FailedRun, RunRecord, RunResult, as_json, as_record

GOLDEN_RUNS = sorted((Path(__file__).parent / "golden" / "runs").glob("*.json"))


def strategy(info: mi.Type) -> st.SearchStrategy[Any]:
    """Values of a msgspec type: finite floats (JSON has no NaN), ints within int64."""
    if isinstance(info, mi.StructType):
        fields = {f.name: strategy(f.type) for f in info.fields}
        return st.builds(info.cls, **fields)
    if isinstance(info, mi.UnionType):
        return st.one_of(*(strategy(t) for t in info.types))
    if isinstance(info, mi.ListType):
        return st.lists(strategy(info.item_type), max_size=3)
    if isinstance(info, mi.DictType):
        return st.dictionaries(st.text(max_size=8), strategy(info.value_type), max_size=3)
    simple: dict[type[mi.Type], st.SearchStrategy[Any]] = {
        mi.IntType: st.integers(-(2**63), 2**63 - 1),
        mi.FloatType: st.floats(allow_nan=False, allow_infinity=False),
        mi.StrType: st.text(max_size=12),
        mi.BoolType: st.booleans(),
        mi.NoneType: st.none(),
    }
    return simple[type(info)]


def json_round_trip(record: RunRecord) -> RunRecord:
    """The way a record travels: its JSON form written by ``json`` and read back."""
    return as_record(json.loads(json.dumps(as_json(record), indent=1, sort_keys=True)))


@pytest.mark.parametrize("path", GOLDEN_RUNS, ids=[p.stem for p in GOLDEN_RUNS])
def test_every_recorded_run_reads_into_its_record_and_writes_back_unchanged(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    record = as_record(raw)
    assert isinstance(record, RunResult if "counts" in raw else FailedRun)
    assert as_json(record) == raw
    assert json.dumps(as_json(record), indent=1, sort_keys=True) == path.read_text("utf-8")
    encoded = msgspec.json.encode(record)
    assert msgspec.json.decode(encoded, type=type(record)) == record


def test_the_recorded_runs_cover_every_kind_of_record() -> None:
    records = [as_record(json.loads(p.read_text(encoding="utf-8"))) for p in GOLDEN_RUNS]
    done = [r for r in records if isinstance(r, RunResult)]
    assert {r.backend for r in done} == {"off", "basic", "basic+recall", "recallable"}
    assert any(r.online is not None and r.online.records for r in done)
    assert any(isinstance(r, FailedRun) and r.traceback for r in records)
    assert any(r.passes and r.crossings for r in done)


@settings(max_examples=40, deadline=None)
@given(strategy(mi.type_info(RunResult)))
def test_any_run_result_round_trips_through_json(record: RunResult) -> None:
    assert msgspec.json.decode(msgspec.json.encode(record), type=RunResult) == record
    assert json_round_trip(record) == record


@given(strategy(mi.type_info(FailedRun)))
def test_any_failed_run_round_trips_and_leaves_out_what_it_does_not_know(
    record: FailedRun,
) -> None:
    assert json_round_trip(record) == record
    written = as_json(record)
    assert ("traceback" in written) == (record.traceback is not None)
    assert ("seed" in written) == (record.seed is not None)
