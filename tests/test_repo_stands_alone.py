"""The repository stands alone: no tracked file points at a document outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = re.compile(r"\.\./shared|/work/shared|\.\./seeds/|\.\./design/")


def test_no_tracked_file_points_outside_the_repository():
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    offenders = []
    for name in files:
        path = ROOT / name
        if name == "uv.lock" or not path.is_file() or path.suffix in {".svg", ".png", ".gguf"}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        offenders += [
            f"{name}:{n}"
            for n, line in enumerate(text.splitlines(), 1)
            if OUTSIDE.search(line) and path.name != Path(__file__).name
        ]
    assert offenders == []
