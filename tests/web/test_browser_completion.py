"""Tab completion in the page's composer, in a real browser, as the terminal UI completes: an
``@partial`` from the session's workspace (one candidate inserted, a directory with its ``/`` so
Tab goes on; several: their common prefix, named in the hint line as text, a bidi control as its
escape), a ``/command`` from the page's own and the prompt commands; Esc clears the hint; Tab
with nothing to complete moves the focus on, and so does a second Tab that completed nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.path_completion import mention
from dsh.config import dsh_home
from dsh.tui.prompt import complete_path
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import open_page, serve, stored_events
from tests.web.test_browser_undo import open_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HOSTILE = "notes<img src=x onerror=window.__pwned=1>"
BIDI = "notes\u202egnp.exe"


def wait_for_draft(page: Any, draft: str) -> None:
    page.wait_for_function("(d) => document.getElementById('prompt').value === d", arg=draft)


def hint(page: Any) -> list[str]:
    """The hint line's parts as shown (each candidate, then how many more; or its note), once it
    shows."""
    page.locator("#composer-hint").wait_for(state="visible")
    parts: list[str] = page.evaluate(
        """() => [...document.querySelectorAll(
            '#composer-hint .candidate, #composer-hint .more, #composer-hint .hint-note',
        )].map((n) => n.textContent)"""
    )
    return parts


def prompt_value(page: Any) -> str:
    return str(page.input_value("#prompt"))


def focused(page: Any) -> str:
    return str(page.evaluate("() => document.activeElement.id"))


def test_tab_completes_an_at_path_and_names_several_in_the_hint(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)  # its workspace holds notes.txt
    ws = env.workspace
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "main.py").write_text("")
    (ws / "notes-old.txt").write_text("")
    (ws / BIDI).write_text("")
    (ws / HOSTILE).write_text("")
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        page.locator("#prompt").press_sequentially("see @sr")
        page.keyboard.press("Tab")
        wait_for_draft(page, "see @src/")
        assert focused(page) == "prompt"
        assert page.locator("#composer-hint").is_hidden()
        page.keyboard.type("m")
        page.keyboard.press("Tab")
        wait_for_draft(page, "see @src/main.py ")
        page.keyboard.type("and @no")
        page.keyboard.press("Tab")
        # one of them is quoted (its name holds spaces): nothing in common past the @
        assert hint(page) == [
            "@notes-old.txt",
            "@notes.txt",
            '@"notes<img src=x onerror=window.__pwned=1>"',
            "@notes\\u202egnp.exe",
        ]
        assert prompt_value(page) == "see @src/main.py and @no"
        assert page.evaluate("() => window.__pwned") is None
        assert page.locator("#composer-hint img").count() == 0
        assert focused(page) == "prompt"
        page.keyboard.press("Escape")
        page.locator("#composer-hint").wait_for(state="hidden")
        page.keyboard.type("tes-")
        page.keyboard.press("Tab")
        wait_for_draft(page, "see @src/main.py and @notes-old.txt ")
        page.keyboard.type("and @notes.")
        page.keyboard.press("Tab")
        wait_for_draft(page, "see @src/main.py and @notes-old.txt and @notes.txt ")
        # a cursor in the middle of the draft completes the word that ends there
        page.fill("#prompt", "open @src/pkg and go")
        page.evaluate("() => document.getElementById('prompt').setSelectionRange(13, 13)")
        page.keyboard.press("Tab")
        wait_for_draft(page, "open @src/pkg/ and go")
        assert page.evaluate("() => document.getElementById('prompt').selectionEnd") == 14


def test_tab_completes_commands_and_never_traps_the_focus(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    (dsh_home() / "commands").mkdir(parents=True)
    (dsh_home() / "commands" / "review.md").write_text("Review $ARGUMENTS.")
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        prompt = page.locator("#prompt")
        prompt.press_sequentially("/comp")
        page.keyboard.press("Tab")
        wait_for_draft(page, "/compact ")
        page.fill("#prompt", "/ti")
        page.keyboard.press("Tab")
        wait_for_draft(page, "/title ")
        page.fill("#prompt", "/co")
        page.keyboard.press("Tab")
        assert hint(page) == ["/compact", "/context", "/cost"]
        page.fill("#prompt", "/REV")  # /re: /retry or /review
        page.keyboard.press("Tab")
        wait_for_draft(page, "/review ")
        page.fill("#prompt", "/")
        page.keyboard.press("Tab")
        assert hint(page) == [  # the page's own commands (commands.js) and yours, the first 8
            "/approval",
            "/clear",
            "/compact",
            "/context",
            "/cost",
            "/diff",
            "/fork",
            "/help",
            "(+8 more)",  # /model, /new, /retry, /rewind, /title, /undo, dsh's /init, your /review
        ]
        assert focused(page) == "prompt" and prompt.input_value() == "/"
        page.keyboard.press("Tab")  # completed nothing, pressed again: the focus moves on
        page.wait_for_function("() => document.activeElement.id === 'send'")
        assert page.locator("#composer-hint").is_hidden()
        # nothing to complete: Tab moves the focus at once, as before
        page.fill("#prompt", "hello")
        prompt.focus()
        page.keyboard.press("Tab")
        page.wait_for_function("() => document.activeElement.id === 'send'")
        # an @word with no candidate says so; Tab again moves on
        page.fill("#prompt", "see @zz")
        prompt.focus()
        page.keyboard.press("Tab")
        assert hint(page) == ["Nothing to complete for @zz (Tab again moves on)"]
        assert focused(page) == "prompt"
        page.keyboard.press("Tab")
        page.wait_for_function("() => document.activeElement.id === 'send'")
        # Shift+Tab is never taken
        page.fill("#prompt", "see @sr")
        prompt.focus()
        page.keyboard.press("Shift+Tab")
        page.wait_for_function("() => document.activeElement.id !== 'prompt'")
        assert prompt.input_value() == "see @sr"


WORDS = [
    # (draft, cursor, what Tab completes: None, or (kind, start, end))
    ("/com", 4, ("command", 0, 4)),
    ("/com", 2, ("command", 0, 4)),  # the whole one-word draft, as the terminal UI
    ("/compact now", 4, None),
    (" /com", 5, None),
    ("see @sr", 7, ("path", 4, 7)),
    ("see @sr", 6, ("path", 4, 6)),
    ("see @sr", 4, None),  # the cursor before the @: no word ends there
    ("see @", 5, ("path", 4, 5)),
    ("a\n@src/p", 8, ("path", 2, 8)),
    ("email@host", 10, None),
    ("hello", 5, None),
    ("", 0, None),
    ('see @"my d', 10, ("path", 4, 10)),  # an open quote: the mention from its @"
    ('(@"my d', 7, ("path", 1, 7)),  # after an opening bracket
    ('x@"my d', 7, None),  # inside a word: no mention; the word at the cursor is "d"
    ('@"a"b', 5, ("path", 0, 5)),  # the quote closed: an unquoted word
    ('x @"a\nb', 7, None),  # a quote on another line is not open here
    ('@"', 2, ("path", 0, 2)),
]
MENTIONED = ["plain.txt", "a b.txt", "my dir/", 'say "hi".txt', "a\u0085b", "a\ufeffb", "a\x1cb"]
"""Names a mention quotes, or not, as Python's ``str.isspace`` has it (JavaScript's differs)."""


def test_the_word_tab_completes_is_the_one_the_terminal_ui_completes(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.wait_for_function("() => window.dsh && window.dsh.warnings.socket?.readyState === 1")
        found = page.evaluate(
            """async (words) => {
                const { completionTarget } = await import('/s/completion.js');
                return words.map(([draft, cursor]) => {
                    const t = completionTarget(draft, cursor);
                    return t && [t.kind, t.start, t.end];
                });
            }""",
            [[draft, cursor] for draft, cursor, _ in WORDS],
        )
        assert found == [list(w) if w else None for _, _, w in WORDS]
        mentions = page.evaluate(
            """async (names) => {
                const { mention } = await import('/s/completion.js');
                return names.flatMap((name) => [mention(name), mention(name, true)]);
            }""",
            MENTIONED,
        )
        assert mentions == [
            mention(name, quoted=quoted) for name in MENTIONED for quoted in (False, True)
        ]
        assert page.evaluate(
            """async () => {
                const { commonMention } = await import('/s/completion.js');
                return [
                    commonMention('my ', 2, 2), commonMention('no', 3, 0),
                    commonMention('no', 3, 1), commonMention('my', 2, 0, true),
                ];
            }"""
        ) == ['@"my ', "@no", "@", '@"my']
        assert page.evaluate(
            """async () => {
                const { commonPrefix, completed } = await import('/s/completion.js');
                const t = { start: 4, end: 7 };
                return [
                    commonPrefix(['@notes-old.txt', '@notes.txt']),
                    commonPrefix(['\\u{1F600}a', '\\u{1F601}a']),
                    completed('see @sr', t, ['@src/'], '@src/'),
                    completed('see @no', t, ['@notes.txt'], '@notes.txt'),
                    completed('see @no', t, ['@no1', '@no2'], '@no'),
                    completed('see @no', t, [], ''),
                ];
            }"""
        ) == [
            "@notes",
            "",  # never half a surrogate pair
            {"replacement": "@src/", "draft": "see @src/", "cursor": 9},
            {"replacement": "@notes.txt ", "draft": "see @notes.txt ", "cursor": 15},
            None,
            None,
        ]


def test_a_path_with_a_space_is_inserted_quoted_as_the_terminal_ui_does_and_attaches(
    browser: Any, tmp_path: Path
) -> None:
    """Each Tab's draft is the terminal UI's (``dsh.tui.prompt.complete_path`` on the same
    workspace); the mention sent attaches the file (``dsh.agent.mentions``)."""
    env = make_env(tmp_path)
    env.script = [{"text": "read it"}]
    ws = env.workspace
    (ws / "my dir").mkdir()
    (ws / "my dir" / "a b.txt").write_text("the spaced file\n")
    (ws / "my notes.md").write_text("")
    (ws / "x y.txt").write_text("")
    (ws / "xz.txt").write_text("")
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        prompt = page.locator("#prompt")
        steps = [  # (draft, after Tab, or the candidates listed when nothing was inserted)
            ("see @my", 'see @"my '),  # both quoted: what they begin with, the quote open
            ('see @"my ', ['@"my dir/', '@"my notes.md"']),  # nothing more in common
            ('see @"my d', 'see @"my dir/'),  # a quoted directory stays open
            ('see @"my dir/', 'see @"my dir/a b.txt" '),
            ("see @x", ['@"x y.txt"', "@xz.txt"]),  # one quoted, one not: nothing past the @
            ("see @xz", "see @xz.txt "),
        ]
        for draft, after in steps:
            page.fill("#prompt", draft)
            prompt.focus()
            page.keyboard.press("Escape")  # the last step's hint goes
            page.locator("#composer-hint").wait_for(state="hidden")
            page.keyboard.press("End")
            page.keyboard.press("Tab")
            if isinstance(after, list):
                assert terminal_ui_tab(draft, ws) == draft
                assert hint(page) == after
                assert prompt.input_value() == draft
            else:
                assert terminal_ui_tab(draft, ws) == after
                wait_for_draft(page, after)

        page.fill("#prompt", "")
        prompt.press_sequentially('read @"my dir/a')
        page.keyboard.press("Tab")
        wait_for_draft(page, 'read @"my dir/a b.txt" ')
        page.keyboard.press("Enter")
        page.wait_for_function(
            "() => window.dsh.view.allRows().some((r) => r.textContent.includes('read it'))"
        )
    attached = [
        event
        for event in stored_events(env, page_session(env))
        if event["type"] == "user/message" and event["data"]["source"].get("plugin") == "attach"
    ]
    assert len(attached) == 1
    assert "the spaced file" in json.dumps(attached[0]["data"]["content"])


def terminal_ui_tab(draft: str, workspace: Path) -> str:
    """The draft after the terminal UI's Tab at its end (``PromptBox._complete``'s rule)."""
    found = complete_path(draft, len(draft), workspace)
    assert found is not None
    one = len(found.candidates) == 1
    replacement = found.candidates[0] if one else found.common
    if one and not replacement.endswith("/"):
        replacement += " "
    current = draft[found.start : found.end]
    if len(replacement) <= len(current):
        return draft
    return draft[: found.start] + replacement + draft[found.end :]


def page_session(env: WebEnv) -> str:
    [header] = env.store.list()
    return header.id
