"""``GET /api/sessions/{id}/diff``: ``/diff`` for the page, the changes in the session's recorded
workspace since its last commit (git's, read off real repositories), capped as the terminal UI
caps them; a clean tree or a workspace outside git is one line; a stored session is read, not
opened; git runs off the event loop, so the server answers others while it works."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from dsh.agent.workspace_diff import SHOWN_LINES, UNTRACKED_SHOWN
from dsh.surface import Session
from dsh.web import BackgroundServer
from tests.web.conftest import AUTH, WebEnv, error_of, wait_until

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

HOSTILE = "new <b>x\u202egnp.py"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True, capture_output=True,
    )  # fmt: skip


def committed(repo: Path) -> Path:
    """``repo`` made a git repository whose one commit holds what is in it."""
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    return repo


def draft_in(client: TestClient, cwd: Path) -> str:
    created = client.post("/api/sessions", json={"cwd": str(cwd)})
    assert created.status_code == 201, created.text
    return created.json()["session"]["id"]  # type: ignore[no-any-return]


def diff_of(client: TestClient, sid: str) -> dict[str, object]:
    answer = client.get(f"/api/sessions/{sid}/diff")
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_the_changes_since_the_last_commit_with_untracked_files(
    client: TestClient, env: WebEnv
) -> None:
    repo = committed(env.workspace)  # notes.txt
    (repo / "notes.txt").write_text("line 0 changed\n")
    (repo / HOSTILE).write_text("x\n")
    sid = draft_in(client, repo)

    answer = diff_of(client, sid)

    assert answer["note"] is None
    assert answer["changed"] == 1 and answer["moreLines"] == 0 and answer["truncated"] is False
    [notes] = answer["files"]  # type: ignore[misc]
    assert notes["path"] == "notes.txt"
    assert notes["lines"][:2] == ["--- a/notes.txt", "+++ b/notes.txt"]
    assert "-line 0: the quick brown fox" in notes["lines"]
    assert "+line 0 changed" in notes["lines"]
    assert answer["untracked"] == [HOSTILE] and answer["untrackedTotal"] == 1
    assert client.get(f"/api/sessions/{sid}").json()["draft"] is True  # nothing logged


def test_a_clean_tree_and_a_workspace_outside_git_are_one_line_each(
    client: TestClient, env: WebEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(env.root))
    plain = diff_of(client, draft_in(client, env.workspace))
    assert plain["note"] == (
        f"/diff: {env.workspace} is not in a git work tree: no changes to show"
    )
    assert plain["files"] == [] and plain["untracked"] == [] and plain["changed"] == 0

    clean = diff_of(client, draft_in(client, committed(env.workspace)))
    assert clean["note"] == "No changes since the last commit."
    assert clean["files"] == []


def test_a_stored_session_is_read_in_its_recorded_workspace_not_opened(
    client: TestClient, env: WebEnv
) -> None:
    other = env.root / "other"
    other.mkdir()
    (other / "a.txt").write_text("a\n")
    committed(other)
    (other / "a.txt").write_text("b\n")
    with Session.create(env.store, cwd=other) as stored:
        sid = stored.id

    answer = diff_of(client, sid)

    assert [change["path"] for change in answer["files"]] == ["a.txt"]  # type: ignore[attr-defined]
    assert client.get(f"/api/sessions/{sid}").json()["open"] is False


def test_a_long_diff_is_cut_at_the_shown_lines_and_says_how_many_more(
    client: TestClient, env: WebEnv
) -> None:
    repo = env.workspace
    (repo / "big.txt").write_text("".join(f"old {n}\n" for n in range(SHOWN_LINES)))
    (repo / "later.txt").write_text("old\n")
    committed(repo)
    (repo / "big.txt").write_text("".join(f"new {n}\n" for n in range(SHOWN_LINES)))
    (repo / "later.txt").write_text("new\n")
    for n in range(UNTRACKED_SHOWN + 5):
        (repo / f"u{n:03}.txt").write_text("")

    answer = diff_of(client, draft_in(client, repo))

    files = answer["files"]
    assert [change["path"] for change in files] == ["big.txt"]  # type: ignore[attr-defined]
    shown = sum(len(change["lines"]) for change in files)  # type: ignore[attr-defined]
    big_total = 3 + 2 * SHOWN_LINES  # ---, +++, @@, then every line removed and added
    assert shown == SHOWN_LINES
    assert answer["moreLines"] == big_total - SHOWN_LINES + 5  # later.txt's five lines too
    assert answer["changed"] == 2
    assert len(answer["untracked"]) == UNTRACKED_SHOWN  # type: ignore[arg-type]
    assert answer["untrackedTotal"] == UNTRACKED_SHOWN + 5


def test_an_unknown_session_is_a_404(client: TestClient) -> None:
    assert error_of(client.get("/api/sessions/nosuch/diff"))[0] == 404


def test_git_runs_off_the_event_loop(
    env: WebEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git held up (here: until the test lets it go) keeps no other request waiting."""
    real_git = shutil.which("git")
    repo = committed(env.workspace)
    (repo / "notes.txt").write_text("changed\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started, gate = tmp_path / "started", tmp_path / "gate"
    (bin_dir / "git").write_text(
        f'#!/bin/sh\ntouch "{started}"\n'
        f'while [ ! -e "{gate}" ]; do sleep 0.01; done\n'
        f'exec "{real_git}" "$@"\n'
    )
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(str(real_git)).parent}")
    with (
        BackgroundServer(env.app()) as server,
        httpx.Client(base_url=server.base_url, headers=AUTH, timeout=30) as http,
        ThreadPoolExecutor(1) as pool,
    ):
        sid = http.post("/api/sessions", json={}).json()["session"]["id"]
        pending = pool.submit(http.get, f"/api/sessions/{sid}/diff")
        wait_until(started.exists, what="git to start")
        assert http.get(f"/api/sessions/{sid}").status_code == 200  # answered meanwhile
        assert http.get("/api/sessions").status_code == 200
        assert not pending.done()
        gate.touch()
        answer = pending.result(timeout=30).json()
    assert [change["path"] for change in answer["files"]] == ["notes.txt"]


def test_a_filter_the_repositorys_config_names_does_not_run_with_the_servers_secrets(
    client: TestClient, env: WebEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit's repro: a ``.gitattributes`` filter whose ``clean`` command the repository's
    ``.git/config`` names ran on ``/diff``, without approval, with the server's environment."""
    marker = env.root / "filter-ran"
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-DIFFLEAK_1234567890")
    repo = env.workspace
    (repo / ".gitattributes").write_text("notes.txt filter=evil\n")
    committed(repo)
    git(repo, "config", "filter.evil.clean", f"sh -c 'env > {marker}; cat'")
    (repo / "notes.txt").write_text("line 0 changed\n")

    answer = diff_of(client, draft_in(client, repo))

    assert not marker.exists()
    [notes] = answer["files"]  # type: ignore[misc]
    assert notes["path"] == "notes.txt" and "+line 0 changed" in notes["lines"]
