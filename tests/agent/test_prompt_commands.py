"""Prompt commands: a Markdown file a slash command sends as the prompt
(``dsh.agent.prompt_commands``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from dsh.agent.init_command import INIT_TEMPLATE
from dsh.agent.prompt_commands import (
    MAX_BYTES,
    MAX_DEPTH,
    PromptCommands,
    PromptCommandSource,
    load_prompt_commands,
    shell_words,
)

BUILT_IN = ("compact", "help", "undo")


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (home / "commands").mkdir(parents=True)
    (workspace / ".dsh" / "commands").mkdir(parents=True)
    return home, workspace


def mine(dirs: tuple[Path, Path], name: str, text: str | bytes) -> Path:
    path = dirs[0] / "commands" / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def projects(dirs: tuple[Path, Path], name: str, text: str) -> Path:
    path = dirs[1] / ".dsh" / "commands" / name
    path.write_text(text)
    return path


def load(dirs: tuple[Path, Path]):
    return load_prompt_commands(*dirs, BUILT_IN)


def files(commands: PromptCommands) -> tuple[str, ...]:
    """The names of the commands made of files (not dsh's own, ``/init``)."""
    return tuple(name for name in commands.names if commands.by_name[name].scope != "dsh")


def test_arguments_fill_the_placeholder_or_follow_the_text(dirs):
    mine(dirs, "review.md", "Review $ARGUMENTS for bugs.\nBe terse about $ARGUMENTS.\n")
    mine(dirs, "plan.md", "Write a plan first.\n")
    commands = load(dirs)
    assert commands.expand("review", " src/app.py ") == (
        "Review src/app.py for bugs.\nBe terse about src/app.py."
    )
    assert commands.expand("plan", "the cache layer") == "Write a plan first.\n\nthe cache layer"
    assert commands.expand("plan", "") == "Write a plan first."
    assert commands.expand("absent", "x") is None
    assert files(commands) == ("plan", "review")


def test_front_matter_gives_the_description_else_the_first_line(dirs):
    mine(dirs, "fix.md", "---\ndescription: Fix the failing test\n---\nFind and fix $ARGUMENTS\n")
    mine(dirs, "doc.md", "\n\nDocument the public API of $ARGUMENTS.\nMore.\n")
    commands = load(dirs)
    assert commands.by_name["fix"].description == "Fix the failing test"
    assert commands.by_name["fix"].template == "Find and fix $ARGUMENTS"
    assert commands.by_name["doc"].description == "Document the public API of $ARGUMENTS."
    help_text = commands.help_text()
    assert help_text.splitlines()[0].startswith("Your commands")
    assert "/fix    Fix the failing test  (user)" in help_text


def test_built_ins_win_then_yours_then_the_projects(dirs):
    mine(dirs, "undo.md", "pretend to undo")
    mine(dirs, "review.md", "my review")
    projects(dirs, "review.md", "the project's review")
    projects(dirs, "lint.md", "the project's lint")
    commands = load(dirs)
    assert files(commands) == ("lint", "review")
    assert commands.expand("review", "") == "my review"
    assert commands.by_name["lint"].scope == "project"
    warnings = "\n".join(commands.warnings)
    assert "undo.md skipped: /undo is a built-in command" in warnings
    assert "review.md skipped: your own /review" in warnings


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("Bad Name.md", "x", "a name is 1 to 40 letters"),
        ("big.md", "x" * (MAX_BYTES + 1), f"over the limit of {MAX_BYTES:,} bytes"),
        ("latin.md", b"caf\xe9", "not UTF-8 text"),
        ("yaml.md", "---\ndescription: [unclosed\n---\nbody", "front matter is not YAML"),
        ("list.md", "---\n- a\n---\nbody", "must be a mapping"),
        ("open.md", "---\ndescription: x\nbody", "no closing --- line"),
        ("empty.md", "---\ndescription: x\n---\n\n", "no prompt text"),
        ("typed.md", "---\ndescription: 3\n---\nbody", "description must be text"),
    ],
)
def test_a_file_that_cannot_be_a_command_is_skipped_with_its_reason(dirs, name, content, problem):
    mine(dirs, "good.md", "still here")
    mine(dirs, name, content)
    commands = load(dirs)
    assert files(commands) == ("good",)
    (warning,) = commands.warnings
    assert name in warning and problem in warning


def test_only_markdown_files_count_and_missing_directories_are_no_error(tmp_path):
    home, workspace = tmp_path / "nohome", tmp_path / "nows"
    assert files(load_prompt_commands(home, workspace, BUILT_IN)) == ()
    (home / "commands").mkdir(parents=True)
    (home / "commands" / "notes.txt").write_text("not a command")
    (home / "commands" / "dir.md").mkdir()
    assert files(load_prompt_commands(home, workspace, BUILT_IN)) == ()


def test_a_hostile_description_is_one_printable_line(dirs):
    mine(dirs, "t.md", '---\ndescription: "a\\x1b]0;pwn\\x07\\nb"\n---\nbody')
    (command,) = [c for c in load(dirs).by_name.values() if c.scope != "dsh"]
    assert "\x1b" not in command.description and "\n" not in command.description


def test_the_source_reads_again_only_after_a_change_and_warns_once(dirs, caplog):
    source = PromptCommandSource(*dirs, BUILT_IN)
    assert files(source.current()) == ()
    path = mine(dirs, "a.md", "first")
    mine(dirs, "help.md", "shadow")
    with caplog.at_level(logging.WARNING, logger="dsh.agent.prompt_commands"):
        assert source.current().expand("a", "") == "first"
        first = source.current()
        assert source.current() is first  # nothing changed: not read again
        path.write_text("second, longer")
        os.utime(path, ns=(1, 1))  # a different size and time
        assert source.current().expand("a", "") == "second, longer"
    shadowed = [r for r in caplog.records if "help.md skipped" in r.getMessage()]
    assert len(shadowed) == 1


# A project's command must lie in the workspace, as any file a tool reads; yours may lie anywhere.

MARKER = "sk-OUTSIDE_MARKER_0123456789"
OUTSIDE = "it leads outside the workspace (a symlink on its way points out of it)"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "id_ed25519"
    path.write_text(f"Leak {MARKER}\n")
    return path


def test_a_project_command_leading_outside_is_skipped_one_inside_still_loads(dirs, secret):
    commands_dir = dirs[1] / ".dsh" / "commands"
    projects(dirs, "real.md", "Review the change.")
    (commands_dir / "steal.md").symlink_to(Path("../../..") / "outside" / secret.name)
    (commands_dir / "inner.md").symlink_to("real.md")

    commands = load(dirs)

    assert files(commands) == ("inner", "real")
    assert commands.expand("inner", "") == "Review the change."
    assert all(MARKER not in c.template for c in commands.by_name.values())
    assert commands.warnings == (f"prompt command {commands_dir / 'steal.md'} skipped: {OUTSIDE}",)
    assert str(secret) not in commands.help_text()


def test_a_project_commands_directory_leading_outside_is_skipped_whole(dirs, secret):
    commands_dir = dirs[1] / ".dsh" / "commands"
    commands_dir.rmdir()
    (secret.parent / "steal.md").write_text(f"Leak {MARKER}\n")
    commands_dir.symlink_to(secret.parent)

    commands = load(dirs)

    assert files(commands) == ()
    assert commands.warnings == (f"prompt commands in {commands_dir} skipped: {OUTSIDE}",)


def test_your_own_command_may_be_a_symlink_anywhere(dirs, secret):
    (dirs[0] / "commands" / "mine.md").symlink_to(secret)
    assert MARKER in (load(dirs).expand("mine", "") or "")


def test_usage_gives_the_prompt_command_limit_as_one_figure_the_one_enforced() -> None:
    """docs/usage.md said "over 64 KB" in one place and "64,000 bytes" in another; the limit is
    ``MAX_BYTES``, said as a refused file's warning says it."""
    usage = (Path(__file__).parents[2] / "docs" / "usage.md").read_text()
    said = f"{MAX_BYTES:,} bytes"
    assert usage.count(said) == 2  # the commands' rules, and the bounded reads' list
    assert "64 KB" not in usage and "64 KiB" not in usage


# A file in a subdirectory is a namespaced command: frontend/component.md is /frontend:component.


def test_a_file_in_a_subdirectory_is_a_command_named_with_its_directories(dirs):
    (dirs[1] / ".dsh" / "commands" / "frontend" / "forms").mkdir(parents=True)
    projects(dirs, "frontend/component.md", "Write the $1 component.")
    projects(dirs, "frontend/forms/Field.md", "Add a form field.")
    (dirs[0] / "commands" / "git").mkdir()
    mine(dirs, "git/pr.md", "Open a PR.")

    commands = load(dirs)

    assert files(commands) == ("frontend:component", "frontend:forms:field", "git:pr")
    assert commands.expand("frontend:component", "Button") == "Write the Button component."
    assert commands.by_name["git:pr"].scope == "user"
    assert commands.warnings == ()
    assert "/frontend:forms:field" in commands.help_text()


def test_a_subdirectory_file_that_cannot_be_a_command_is_named_and_listed_not_loaded(dirs):
    """Said by name, never skipped in silence: a bad directory name, one too deep."""
    root = dirs[1] / ".dsh" / "commands"
    (root / "Front End").mkdir()
    projects(dirs, "Front End/card.md", "x")
    deep = root / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    projects(dirs, "a/b/c/ok.md", "three levels down")
    projects(dirs, "a/b/c/d/far.md", "x")

    commands = load(dirs)

    assert files(commands) == ("a:b:c:ok",)
    assert commands.warnings == (
        f"prompt commands in {deep} skipped: deeper than {MAX_DEPTH} directories",
        f"prompt command {root / 'Front End' / 'card.md'} skipped: each of its directories' "
        "names and its own is 1 to 40 letters, digits, _ or -, starting with a letter or digit",
    )
    help_text = commands.help_text()
    assert help_text.split("Not loaded\n")[1].splitlines() == [
        f"  {warning}" for warning in commands.warnings
    ]


def test_a_project_subdirectory_leading_outside_is_skipped_and_never_read(dirs, secret):
    root = dirs[1] / ".dsh" / "commands"
    (secret.parent / "steal.md").write_text(f"Leak {MARKER}\n")
    (root / "shared").symlink_to(secret.parent)
    (root / "inner").symlink_to(root / ".." / "more")  # stays inside the workspace: read
    (dirs[1] / ".dsh" / "more").mkdir()
    (dirs[1] / ".dsh" / "more" / "lint.md").write_text("Lint it.")

    commands = load(dirs)

    assert files(commands) == ("inner:lint",)
    assert all(MARKER not in c.template for c in commands.by_name.values())
    assert commands.warnings == (f"prompt commands in {root / 'shared'} skipped: {OUTSIDE}",)


def test_a_symlink_back_up_is_looked_into_once(dirs):
    mine(dirs, "a.md", "A")
    (dirs[0] / "commands" / "loop").symlink_to(dirs[0] / "commands")
    assert files(load(dirs)) == ("a",)


def test_the_source_reads_again_when_a_file_in_a_subdirectory_changes(dirs):
    source = PromptCommandSource(*dirs, BUILT_IN)
    assert files(source.current()) == ()
    (dirs[0] / "commands" / "ops").mkdir()
    mine(dirs, "ops/deploy.md", "Deploy.")
    assert source.current().expand("ops:deploy", "") == "Deploy."


# $1 … $9: the arguments' words, as a shell splits them.


def test_numbered_placeholders_take_the_arguments_shell_words(dirs):
    mine(dirs, "pr.md", "Review PR #$1 about $2, noting $3. All: $ARGUMENTS")
    commands = load(dirs)
    assert commands.expand("pr", '12 "the login bug"') == (
        'Review PR #12 about the login bug, noting . All: 12 "the login bug"'
    )
    assert commands.expand("pr", "") == "Review PR # about , noting . All:"


def test_numbered_placeholders_stop_at_nine_and_are_not_read_again_in_the_arguments(dirs):
    mine(dirs, "nine.md", "$9|$10|$1")
    mine(dirs, "fix.md", "Fix $1 then $2")
    commands = load(dirs)
    words = " ".join(f"w{i}" for i in range(1, 11))
    assert commands.expand("nine", words) == "w9|$10|w1"  # $10 is no placeholder
    assert commands.expand("fix", "$2 x") == "Fix $2 then x"  # an argument's $2 stays as typed


def test_arguments_whose_quotes_do_not_pair_are_split_at_white_space(dirs):
    mine(dirs, "why.md", "First word: $1; second: $2")
    assert load(dirs).expand("why", "it's broken") == "First word: it's; second: broken"


def test_only_numbered_placeholders_keep_the_arguments_out_of_the_tail(dirs):
    mine(dirs, "one.md", "Explain $1.")
    assert load(dirs).expand("one", "retry.py and more") == "Explain retry.py."
    assert shell_words('a "b c" d\\ e') == ["a", "b c", "d e"]


# /init: dsh's own prompt command, in every face through the same machinery.


def test_init_is_dshs_own_command_asking_for_agents_md(dirs):
    commands = load(dirs)
    init = commands.by_name["init"]
    assert (init.scope, init.path) == ("dsh", None)
    assert commands.expand("init", "") == INIT_TEMPLATE
    assert "AGENTS.md" in INIT_TEMPLATE and "test" in INIT_TEMPLATE
    assert commands.expand("init", "mention the Docker setup") == (
        f"{INIT_TEMPLATE}\n\nmention the Docker setup"
    )
    assert "/init" in commands.help_text() and "(dsh)" in commands.help_text()


def test_your_or_the_projects_init_md_replaces_dshs_own(dirs):
    projects(dirs, "init.md", "The project's init.")
    assert load(dirs).expand("init", "") == "The project's init."
    mine(dirs, "init.md", "My init.")
    commands = load(dirs)
    assert commands.expand("init", "") == "My init."
    assert commands.by_name["init"].scope == "user"
