"""No module of ``src/dsh`` is longer than 500 lines: a module that grows past it holds more
than one idea and gets split (``dsh.tui.app`` once reached 506 lines unnoticed)."""

from __future__ import annotations

from pathlib import Path

import dsh

LIMIT = 500
SRC = Path(dsh.__file__).parent


def line_count(path: Path) -> int:
    """Lines in ``path`` as an editor numbers them (a last line without a newline counts)."""
    return len(path.read_text(encoding="utf-8").splitlines())


def test_line_count_counts_an_unterminated_last_line(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("a = 1\nb = 2")
    assert line_count(module) == 2
    module.write_text("a = 1\nb = 2\n")
    assert line_count(module) == 2


def test_every_module_is_at_most_500_lines() -> None:
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 100  # the package was found, not an empty directory
    too_long = {
        str(path.relative_to(SRC)): lines for path in modules if (lines := line_count(path)) > LIMIT
    }
    assert too_long == {}, f"split these modules (over {LIMIT} lines): {too_long}"


def test_every_web_client_module_is_at_most_500_lines() -> None:
    """The same rule for the page's own ES modules (``dsh web``'s ``static/``, not the vendored
    libraries): ``app.js`` once reached 500 lines, and a module split off instead."""
    static = SRC / "web" / "static"
    modules = sorted(static.glob("*.js"))
    assert len(modules) > 20  # the client was found
    too_long = {path.name: lines for path in modules if (lines := line_count(path)) > LIMIT}
    assert too_long == {}, f"split these modules (over {LIMIT} lines): {too_long}"
