"""``@path`` in a prompt attaches the file or directory it names (dsh.agent.mentions)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.agent.mentions import (
    ATTACH_PLUGIN,
    MAX_ATTACHMENTS,
    attach,
    mentioned_paths,
)
from dsh.events import PluginSource, UserMessageEvent
from dsh.tools.secrets import SecretPolicy
from tests.agent.conftest import Harness, run


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "notes.md").write_text("one\ntwo\n")
    (root / "my file.txt").write_text("spaced\n")
    return root


def no_secrets() -> SecretPolicy:
    return SecretPolicy.from_environment({})


# ---- which words are mentions ---------------------------------------------------------------


def test_mentions_are_found_at_word_starts_in_order_and_once(workspace: Path) -> None:
    prompt = "compare @src/app.py with (@notes.md), then @src/app.py again"
    assert mentioned_paths(prompt, workspace) == ["src/app.py", "notes.md"]


def test_an_email_address_or_a_doubled_at_is_not_a_mention(workspace: Path) -> None:
    assert mentioned_paths("mail me@notes.md or @@notes.md", workspace) == []


def test_trailing_punctuation_is_dropped_only_when_the_path_without_it_exists(
    workspace: Path,
) -> None:
    (workspace / "v1.").write_text("a file whose name ends in a dot\n")
    assert mentioned_paths("see @src/app.py. and @notes.md!", workspace) == [
        "src/app.py",
        "notes.md",
    ]
    assert mentioned_paths("see @v1.", workspace) == ["v1."]


def test_a_quoted_mention_may_hold_spaces(workspace: Path) -> None:
    assert mentioned_paths('read @"my file.txt" please', workspace) == ["my file.txt"]


@given(st.text(alphabet="ab @./\n\"'(", max_size=40))
def test_every_mention_found_occurs_in_the_prompt_after_an_at(text: str) -> None:
    for path in mentioned_paths(text, Path("/nonexistent-dsh-workspace")):
        assert path and (f"@{path}" in text or f'@"{path}"' in text)


# ---- what is attached -----------------------------------------------------------------------


def test_a_file_is_attached_as_read_file_shows_it(workspace: Path) -> None:
    [found] = attach("look at @src/app.py", workspace, no_secrets(), budget_chars=10_000)
    assert found.text.splitlines() == [
        "[attached] The user attached src/app.py (as read_file shows it):",
        "1\tdef main():",
        "2\t    return 1",
    ]


def test_a_directory_attaches_its_listing(workspace: Path) -> None:
    [found] = attach("what is in @src/ ?", workspace, no_secrets(), budget_chars=10_000)
    assert found.text.splitlines()[1:] == ["app.py"]
    assert "directory src" in found.text.splitlines()[0]


def test_a_word_that_names_nothing_attaches_nothing(workspace: Path) -> None:
    assert attach("use @dataclass here", workspace, no_secrets(), budget_chars=10_000) == []


def test_the_same_file_by_two_spellings_is_attached_once(workspace: Path) -> None:
    found = attach("@src/app.py and @./src/app.py", workspace, no_secrets(), budget_chars=10_000)
    assert [a.path for a in found] == ["src/app.py"]


def test_a_path_outside_the_workspace_is_named_with_why_and_not_read(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("do not send\n")
    [found] = attach(f"see @{outside}", workspace, no_secrets(), budget_chars=10_000)
    assert "was not attached" in found.text and "outside the workspace" in found.text
    assert "do not send" not in found.text


def test_a_binary_file_is_named_with_why(workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    [found] = attach("@blob.bin", workspace, no_secrets(), budget_chars=10_000)
    assert "was not attached" in found.text and "binary" in found.text


def test_a_file_that_cannot_be_read_is_named_with_why_and_the_turn_goes_on(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(*args: object, **kwargs: object) -> str:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("dsh.agent.mentions.read_window", unreadable)
    [found] = attach("@notes.md", workspace, no_secrets(), budget_chars=10_000)
    assert found.text == "[attached] @notes.md was not attached: Permission denied"


def test_known_secret_values_are_masked_in_an_attachment(workspace: Path) -> None:
    (workspace / ".env").write_text("OPENAI_API_KEY=sk-abcdefghijklmnop\n")
    secrets = SecretPolicy.from_environment({"OPENAI_API_KEY": "sk-abcdefghijklmnop"})
    [found] = attach("@.env", workspace, secrets, budget_chars=10_000)
    assert "sk-abcdefghijklmnop" not in found.text and "[masked OPENAI_API_KEY]" in found.text


def test_attachments_past_the_budget_are_cut_with_where_to_read_on(workspace: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"line {n:04d}\n" for n in range(1, 501)))
    first, second = attach("@long.txt @notes.md", workspace, no_secrets(), budget_chars=400)
    assert "call read_file with offset=" in first.text.splitlines()[-1]
    assert "was not attached" in second.text and "read it with read_file" in second.text


def test_a_directory_listing_past_the_budget_is_cut_at_an_entry_naming_the_rest(
    workspace: Path,
) -> None:
    big = workspace / "big"
    big.mkdir()
    for n in range(300):
        (big / f"file{n:03d}.txt").write_text("")
    [found] = attach("@big", workspace, no_secrets(), budget_chars=500)
    lines = found.text.splitlines()
    assert lines[1] == "file000.txt" and all(line.startswith("file") for line in lines[1:-1])
    assert lines[-1] == f"({300 - (len(lines) - 2)} more entries; use list_dir or glob)"
    assert sum(len(line) + 1 for line in lines[1:-1]) <= 500


def test_more_mentions_than_the_cap_end_in_one_note_naming_the_rest(workspace: Path) -> None:
    for n in range(MAX_ATTACHMENTS + 2):
        (workspace / f"f{n}.txt").write_text(f"{n}\n")
    prompt = " ".join(f"@f{n}.txt" for n in range(MAX_ATTACHMENTS + 2))
    found = attach(prompt, workspace, no_secrets(), budget_chars=100_000)
    assert len(found) == MAX_ATTACHMENTS + 1
    assert f"@f{MAX_ATTACHMENTS}.txt, @f{MAX_ATTACHMENTS + 1}.txt" in found[-1].text


# ---- in a turn ------------------------------------------------------------------------------


def test_a_turn_sends_the_attachment_after_the_prompt_and_logs_it_as_a_note(
    harness: Harness,
) -> None:
    (harness.workspace / "a.txt").write_text("hello\n")
    agent = harness.agent([{"text": "It says hello."}], attach_mentions=True)
    run(agent.run_turn("what is in @a.txt?"))
    [request] = harness.provider.requests
    prompt, note = request.messages[-2:]
    assert prompt.text() == "what is in @a.txt?"
    assert note.role == "user" and "1\thello" in note.text()
    logged = [e.data for e in harness.session.of_type(UserMessageEvent)]
    assert [m.source for m in logged][1:] == [PluginSource(plugin=ATTACH_PLUGIN)]


def test_without_attach_mentions_the_prompt_goes_alone(harness: Harness) -> None:
    (harness.workspace / "a.txt").write_text("hello\n")
    agent = harness.agent([{"text": "ok"}], attach_mentions=False)
    run(agent.run_turn("what is in @a.txt?"))
    [request] = harness.provider.requests
    assert request.messages[-1].text() == "what is in @a.txt?"
    assert len(harness.session.of_type(UserMessageEvent)) == 1
