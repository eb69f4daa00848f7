"""Shared by the CLI tests that run the real ``dsh`` console script as a subprocess."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

DSH = str(Path(sys.executable).with_name("dsh"))
"""The console script of this environment."""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The process environment without any developer ``DSH_*`` setting, with a private home."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(tmp_path / "home")
    return environ
