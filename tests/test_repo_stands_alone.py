"""The repository stands alone: no tracked file points at a document outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = re.compile(r"\.\./shared|/work/shared|\.\./seeds/|\.\./design/")
SPEC_SECTION = re.compile(r"(?i)\bspec\s*§|§\s*\d")
"""A citation of a specification section ("spec §4.4", "§11 item 5"): that document is not in the
repository, so a reader cannot follow it; cite the docs/ page and section instead."""


def _offenders(pattern: re.Pattern[str]) -> list[str]:
    """``path:line`` of every line of a tracked text file (this one excepted) matching
    ``pattern``."""
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    offenders = []
    for name in files:
        path = ROOT / name
        if name == "uv.lock" or not path.is_file() or path.suffix in {".svg", ".png", ".gguf"}:
            continue
        if path.name == Path(__file__).name:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        offenders += [
            f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if pattern.search(line)
        ]
    return offenders


def test_no_tracked_file_points_outside_the_repository():
    assert _offenders(OUTSIDE) == []


def test_no_tracked_file_cites_a_specification_section():
    assert _offenders(SPEC_SECTION) == []
