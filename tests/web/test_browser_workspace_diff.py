"""``/diff`` typed in the page's composer, in a real browser over real git repositories: Tab
completes it, Enter shows the workspace's changes since its last commit in a dialog (each file's
diff coloured as the edit cards', its code highlighted unless the file's diff is long, git's
header notes, the untracked files as text), Escape closes it and gives the focus back to the
composer; nothing is sent as a prompt or logged. A clean tree, or a workspace outside git, is
said in one note; a stored session is read without being opened here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dsh.surface import Session
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import first_page_loaded, open_page, send, serve
from tests.web.test_browser_undo import note_toast, open_new_session

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]

HOSTILE = "new <b>x\u202egnp.py"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True, capture_output=True,
    )  # fmt: skip


def committed(env: WebEnv) -> Path:
    repo = env.workspace  # notes.txt
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    return repo


def changes_shown(page: Any) -> dict[str, Any]:
    page.locator("#changes-panel").wait_for(state="visible")
    shown: dict[str, Any] = page.evaluate(
        """() => {
            const panel = document.getElementById('changes-panel');
            const texts = (sel) => [...panel.querySelectorAll(sel)].map((n) => n.textContent);
            return {
                title: document.getElementById('changes-title').textContent,
                paths: texts('.diff-path'),
                removed: texts('.diff-line.del .diff-code'),
                added: texts('.diff-line.add .diff-code'),
                meta: texts('.diff-meta'),
                untracked: texts('.untracked li'),
                highlighted: [...panel.querySelectorAll('.diff')]
                    .filter((box) => box.querySelector('.diff-code span[class^="hljs"]'))
                    .map((box) => box.querySelector('.diff-path').textContent),
                markup: panel.querySelectorAll('#changes-body b').length,
                focused: document.activeElement.id,
                composerInert: document.getElementById('composer').inert,
            };
        }"""
    )
    return shown


def test_diff_shows_the_changes_in_a_dialog_that_escape_closes(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    repo = committed(env)
    (repo / "notes.txt").write_text("line 0 changed\n")
    (repo / "added.py").write_text("print('hi')\n")
    git(repo, "add", "added.py")
    (repo / HOSTILE).write_text("x\n")
    (repo / "long.py").write_text("".join(f"x{n} = {n}\n" for n in range(1100)))
    git(repo, "add", "long.py")  # its diff: over the lines the dialog highlights as code
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        page.locator("#prompt").press_sequentially("/di")
        page.keyboard.press("Tab")
        page.wait_for_function("() => document.getElementById('prompt').value === '/diff '")
        page.keyboard.press("Enter")

        shown = changes_shown(page)
        assert shown["title"] == "/diff · 3 changed, 1 untracked"
        assert shown["paths"] == ["added.py", "long.py", "notes.txt"]
        assert shown["highlighted"] == ["added.py"]  # long.py's code is coloured by line only
        assert "x1099 = 1099" in shown["added"]
        assert "line 0: the quick brown fox" in shown["removed"]
        assert shown["added"][:1] == ["print('hi')"] and "line 0 changed" in shown["added"]
        assert shown["meta"] == ["new file mode 100644"] * 2
        assert shown["untracked"] == ["new <b>x\\u202egnp.py"]  # text, its bidi control escaped
        assert shown["markup"] == 0
        assert shown["focused"] == "changes-body" and shown["composerInert"] is True

        page.keyboard.press("Escape")
        page.locator("#changes-panel").wait_for(state="hidden")
        page.wait_for_function("() => document.activeElement.id === 'prompt'")
        assert page.input_value("#prompt") == ""
        assert page.evaluate("() => [window.dsh.info.draft, window.dsh.lastSeq]") == [True, -1]
        assert page.locator("#toast").is_hidden()
    assert env.store.list() == []  # nothing was sent: the new session is still no stored one


def test_a_clean_tree_or_no_repository_is_one_note(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    env = make_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        send(page, "/diff")
        assert note_toast(page) == (
            f"/diff: {env.workspace} is not in a git work tree: no changes to show"
        )
        assert page.input_value("#prompt") == ""
        committed(env)
        page.evaluate("() => { document.getElementById('toast').hidden = true; }")
        send(page, "/DIFF")
        assert note_toast(page) == "No changes since the last commit."
        assert page.locator("#changes-panel").is_hidden()


def test_diff_reads_a_stored_session_without_opening_it(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    repo = committed(env)
    (repo / "notes.txt").write_text("changed\n")
    with Session.create(env.store, cwd=repo) as stored:
        sid = stored.id
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        send(page, "/diff")
        assert changes_shown(page)["paths"] == ["notes.txt"]
        assert page.evaluate("() => window.dsh.info.open") is False
        page.click("#changes-close")
        page.locator("#changes-panel").wait_for(state="hidden")
