"""A run directory tells the truth about what ran: a run into a directory that already holds
another run is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped,unused-ignore]

from dsh.bench.options import RunOptions
from dsh.bench.suite import run_suite
from dsh.errors import ConfigError
from tests.bench.test_runner import SPEC


def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    return path


def test_a_run_into_a_directory_holding_another_run_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    (out / "runs").mkdir(parents=True)
    old = out / "runs" / "other--basic--seed7.json"
    old.write_text('{"backend": "basic", "error": "x"}', encoding="utf-8")
    (out / "meta.json").write_text('{"seeds": [7]}', encoding="utf-8")
    with pytest.raises(ConfigError, match="already holds a bench run"):
        run_suite(
            [str(spec_file(tmp_path))],
            ["basic"],
            seeds=[5],
            out=out,
            options=RunOptions(latency_ms=0),
            workers=1,
        )
    assert old.is_file() and (out / "meta.json").read_text() == '{"seeds": [7]}'
    assert sorted(p.name for p in out.iterdir()) == ["meta.json", "runs"]


def test_an_empty_directory_is_a_fine_out(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    run_suite(
        [str(spec_file(tmp_path))],
        ["off"],
        seeds=[5],
        out=out,
        options=RunOptions(latency_ms=0),
        workers=1,
    )
    assert [p.name for p in (out / "runs").iterdir()] == ["tiny--off--seed5.json"]
