from __future__ import annotations

from pathlib import Path

import pytest

from dsh.errors import ToolError
from dsh.tools.workspace import display_path, resolve_in_workspace


def test_relative_path_resolves_inside_workspace(workspace: Path) -> None:
    assert resolve_in_workspace("a/b.txt", workspace) == workspace.resolve() / "a" / "b.txt"


def test_absolute_path_inside_workspace_is_accepted(workspace: Path) -> None:
    target = workspace.resolve() / "x.txt"
    assert resolve_in_workspace(str(target), workspace) == target


def test_dotdot_that_stays_inside_is_collapsed(workspace: Path) -> None:
    assert resolve_in_workspace("a/../b", workspace) == workspace.resolve() / "b"


def test_dotdot_escape_is_refused_naming_the_path(workspace: Path) -> None:
    with pytest.raises(ToolError) as err:
        resolve_in_workspace("../x", workspace)
    assert err.value.code == "OUTSIDE_WORKSPACE"
    assert "'../x'" in str(err.value)


def test_absolute_path_outside_is_refused(workspace: Path, outside: Path) -> None:
    with pytest.raises(ToolError) as err:
        resolve_in_workspace(str(outside / "secret.txt"), workspace)
    assert err.value.code == "OUTSIDE_WORKSPACE"


def test_symlink_inside_pointing_outside_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "link").symlink_to(outside)
    with pytest.raises(ToolError) as err:
        resolve_in_workspace("link/secret.txt", workspace)
    assert err.value.code == "OUTSIDE_WORKSPACE"


def test_dangling_symlink_pointing_outside_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "new.txt").symlink_to(outside / "does-not-exist-yet.txt")
    with pytest.raises(ToolError) as err:
        resolve_in_workspace("new.txt", workspace)
    assert err.value.code == "OUTSIDE_WORKSPACE"


def test_nonexistent_path_resolves_through_existing_parent(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real")
    got = resolve_in_workspace("alias/new/file.txt", workspace)
    assert got == workspace.resolve() / "real" / "new" / "file.txt"


def test_must_exist_raises_not_found(workspace: Path) -> None:
    with pytest.raises(ToolError) as err:
        resolve_in_workspace("missing.txt", workspace, must_exist=True)
    assert err.value.code == "NOT_FOUND"


def test_display_path_is_workspace_relative(workspace: Path) -> None:
    root = workspace.resolve()
    assert display_path(root / "a" / "b.txt", workspace) == "a/b.txt"
    assert display_path(root, workspace) == "."
