"""What a partial ``@path`` may name in a workspace, the same for the terminal UI's composer and
the web page's paths API: entries relative to the workspace, directories with a trailing ``/``,
hidden ones only for a dot, and never anything outside the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.agent.mentions import mentioned_paths
from dsh.agent.path_completion import common_prefix, mention, path_candidates


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """``tmp_path/ws`` with a tree inside and a secret folder beside it."""
    ws = tmp_path / "ws"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "mod.py").write_text("")
    (ws / "src" / "main.py").write_text("")
    (ws / "notes.txt").write_text("")
    (ws / "notes-old.txt").write_text("")
    (ws / ".hidden").write_text("")
    (ws / ".git").mkdir()
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key.pem").write_text("")
    return ws


def test_a_partial_names_workspace_entries_directories_with_a_slash(workspace: Path) -> None:
    assert path_candidates("sr", workspace) == ("src/",)
    assert path_candidates("src/", workspace) == ("src/main.py", "src/pkg/")
    assert path_candidates("src/pkg/m", workspace) == ("src/pkg/mod.py",)
    assert path_candidates("no", workspace) == ("notes-old.txt", "notes.txt")
    assert path_candidates("zz", workspace) == ()
    assert path_candidates("src/nosuch/", workspace) == ()
    assert path_candidates("notes.txt/", workspace) == ()  # a file is no folder


def test_hidden_entries_only_when_the_typed_name_starts_with_a_dot(workspace: Path) -> None:
    assert path_candidates("", workspace) == ("notes-old.txt", "notes.txt", "src/")
    assert path_candidates(".", workspace) == (".git/", ".hidden")
    assert path_candidates(".h", workspace) == (".hidden",)
    assert path_candidates("./s", workspace) == ("./src/",)  # the folder part as typed


def test_a_partial_leaving_the_workspace_lists_nothing(workspace: Path, tmp_path: Path) -> None:
    assert path_candidates("../", workspace) == ()
    assert path_candidates("../secret/", workspace) == ()
    assert path_candidates("src/../../", workspace) == ()
    assert path_candidates(f"{tmp_path}/secret/", workspace) == ()
    assert path_candidates("/etc/", workspace) == ()
    assert path_candidates("//", workspace) == ()
    # the workspace named by its absolute path stays inside: its entries, so named
    assert path_candidates(f"{workspace}/sr", workspace) == (f"{workspace}/src/",)
    # .. that comes back inside is inside
    assert path_candidates("src/../no", workspace) == ("src/../notes-old.txt", "src/../notes.txt")


def test_a_symlink_leading_out_is_listed_but_never_walked_into(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "out").symlink_to(tmp_path / "secret")
    assert path_candidates("ou", workspace) == ("out/",)  # a name in the workspace
    assert path_candidates("out/", workspace) == ()
    assert path_candidates("out/k", workspace) == ()


def test_a_workspace_reached_through_a_symlink_completes_as_itself(
    workspace: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    assert path_candidates("src/pkg/", alias) == ("src/pkg/mod.py",)


def test_odd_partials_have_no_candidates_rather_than_an_error(workspace: Path) -> None:
    (workspace / "loop").symlink_to(workspace / "loop")
    assert path_candidates("loop/", workspace) == ()  # Python 3.11 raised RuntimeError here
    assert path_candidates("src\x00/", workspace) == ()
    assert path_candidates("no\x00", workspace) == ()
    assert path_candidates("x", workspace / "gone") == ()


def test_names_with_any_characters_come_back_as_they_are(workspace: Path) -> None:
    odd = "notes\u202egnp.exe \n\x1b[31m"
    (workspace / odd).write_text("")
    assert odd in path_candidates("notes", workspace)


def test_common_prefix_is_by_characters() -> None:
    assert common_prefix(["notes-old.txt", "notes.txt"]) == "notes"
    assert common_prefix(["src/", "src/"]) == "src/"
    assert common_prefix(["a", "b"]) == ""
    assert common_prefix([]) == ""


@pytest.mark.parametrize("name", ["notes.txt", "my notes.md", "a\tb.txt", "sub dir/a b.py"])
def test_a_candidate_goes_in_as_the_mention_that_names_it(tmp_path: Path, name: str) -> None:
    """What completion inserts is read back as that path by the mention parser: quoted when the
    name holds white space, where an unquoted mention would end."""
    inserted = mention(name)
    assert inserted.startswith('@"') == (name != "notes.txt")
    assert mentioned_paths(f"see {inserted} now", tmp_path) == [name]


def test_a_quoted_directory_is_left_open_and_a_quote_in_a_name_is_quoted() -> None:
    assert mention("my dir/") == '@"my dir/'
    assert mention("src/") == "@src/"
    assert mention("src/", quoted=True) == '@"src/'
    assert mention('say "hi".txt') == '@"say "hi".txt"'
