"""The ``dsh`` console script makes its process non-dumpable before it imports anything heavy:
until then any process of the user's reads dsh's environment, API keys included, in
``/proc/<pid>/environ``, and parsing (click) and a command's group (the terminal UI's libraries:
about a second) come after. The real console script in a fresh interpreter, watched by an
import hook that asks the kernel (``PR_GET_DUMPABLE``) as each watched module is first looked
for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_lazy_cli import HEAVY

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

DSH = str(Path(sys.executable).with_name("dsh"))
WATCHED = ["click", "dsh.cli.main", "dsh.cli.tui", "textual"]
PROBE = """
import ctypes, json, runpy, sys
get_dumpable = ctypes.CDLL(None).prctl
before = set(sys.modules)
seen = {{}}

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in {watched!r} and name not in seen:
            seen[name] = get_dumpable(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
        return None

sys.meta_path.insert(0, Watch())
sys.argv = [{dsh!r}, *{argv!r}]
try:
    runpy.run_path({dsh!r}, run_name="__main__")
except SystemExit:
    pass
print(json.dumps({{"seen": seen, "loaded": sorted(set(sys.modules) - before)}}), file=sys.stderr)
"""


def probe(argv: list[str]) -> tuple[dict[str, int], set[str], str]:
    code = PROBE.format(watched=WATCHED, dsh=DSH, argv=argv)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found = json.loads(done.stderr.strip().splitlines()[-1])
    return found["seen"], set(found["loaded"]), done.stdout


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["sessions", "list"]])
def test_the_console_script_is_non_dumpable_before_it_imports_click(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    seen, _, _ = probe(argv)
    assert seen["click"] == 0 and seen["dsh.cli.main"] == 0, seen
    assert set(seen.values()) == {0}, seen  # every watched module the command reached


def test_help_through_the_console_script_still_imports_nothing_heavy() -> None:
    _, loaded, output = probe(["--help"])
    assert "Commands:" in output
    assert [name for name in HEAVY if name in loaded] == []
