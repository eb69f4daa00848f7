"""The terminal UI's ``/help``, ``/context``, ``/cost``, ``/title`` and ``/model`` typed in the
page's composer, in a real browser: ``/help`` lists the page's commands (the server's list, word
for word), your prompt commands and the keys in a dialog; ``/context`` opens the Context panel
with the next request part by part; ``/cost`` says the terminal UI's bills as a note (in the
conversation, as the terminal UI's notes are, and not logged); ``/title`` says the title and
``/title TEXT`` renames the session (header and session list); ``/model`` names the model and
``/model NAME`` moves the next turns to it (the header shows it). What only reads does not
resume a stored session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.billing import cost_report, render_cost
from dsh.config import DEFAULT_CONTEXT_WINDOW, dsh_home
from dsh.events import Usage
from dsh.surface import Session
from dsh.web import BackgroundServer, WebRuntime
from dsh.web.prompt_commands import WEB_COMMANDS
from tests.helpers import append_chat_turn
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded, open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import note_toast, open_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def focused(page: Any) -> str:
    return str(page.evaluate("() => document.activeElement.id"))


def table_rows(page: Any, selector: str) -> list[list[str]]:
    """Each row of the table ``selector`` as its cells' text (its row header first)."""
    rows: list[list[str]] = page.evaluate(
        """(sel) => [...document.querySelectorAll(`${sel} tbody tr`)]
            .map((row) => [...row.children].map((cell) => cell.textContent))""",
        selector,
    )
    return rows


def fresh_note_after(page: Any, draft: str) -> str:
    """The note the conversation shows once ``draft`` is sent."""
    send(page, draft)
    return note_toast(page)


def test_help_lists_the_page_commands_yours_and_the_keys(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    (dsh_home() / "commands").mkdir(parents=True)
    (dsh_home() / "commands" / "review.md").write_text(
        "---\ndescription: Review a file for bugs\n---\nReview $ARGUMENTS."
    )
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        send(page, "/HELP")
        page.locator("#help-panel").wait_for(state="visible")
        commands = table_rows(page, "#help-body .help-commands")
        usages = [row[0] for row in commands]
        assert ", ".join(usages[:-1]) == WEB_COMMANDS  # the server's list, in its order
        assert usages[-1] == "//text"
        assert dict(commands)["/model [NAME]"] == (
            "show the model and those the server lists, or use NAME for this session's next "
            "turns (refused when the server does not list it)"
        )
        assert table_rows(page, "#help-body .help-yours") == [
            ["/init", "Inspect the project and write or refresh its AGENTS.md", "dsh"],
            ["/review", "Review a file for bugs", "user"],
        ]
        keys = [row[0] for row in table_rows(page, "#help-body .help-keys")]
        assert keys == ["Enter", "Shift+Enter", "Tab", "Up, Down", "Esc", "Ctrl+F", "o, a, d, e"]
        assert page.input_value("#prompt") == ""  # done: the draft went
        assert focused(page) == "help-body"  # its text scrolls with the keys
        page.keyboard.press("Escape")
        page.locator("#help-panel").wait_for(state="hidden")
        assert focused(page) == "prompt"


def test_context_opens_the_context_panel_with_the_next_request(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "hello back"}]
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "hello")
        wait_turn_over(page, "hello back")
        send(page, "/context")
        page.locator("#context-panel").wait_for(state="visible")
        # the panel paints the figures it has at once (from before the turn) and then the ones
        # its refresh brings: read it once the tail counts the prompt and the reply
        page.wait_for_function(
            """() => document.querySelectorAll('#context-body tr[data-part]').length === 5
                && document.querySelector('#context-body tr[data-part="tail"] td.num')
                    ?.textContent === '2'"""
        )
        shown = {row[0]: int(row[1]) for row in table_rows(page, "#context-body .context-parts")}
        answer = page.evaluate(
            """async (sid) => {
                const { api, sessionPath } = await import('/s/api.js');
                return api('GET', `${sessionPath(sid)}/context`);
            }""",
            sid,
        )
        items = {part["part"]: part["items"] for part in answer["parts"]}
        assert shown == {
            "System prompt": items["system"],
            "Tool schemas": items["tools"],
            "Index stubs": items["stubs"],
            "State checkpoint": items["state"],
            "Tail (verbatim)": items["tail"],
        }
        assert items["tail"] == 2  # the prompt and the reply
        assert page.input_value("#prompt") == ""
        assert focused(page) == "context-close"
        page.keyboard.press("Escape")
        page.locator("#context-panel").wait_for(state="hidden")
        assert focused(page) == "prompt"


def test_cost_and_title_read_a_stored_session_and_a_new_title_shows(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    usage = Usage(input_tokens=1200, output_tokens=300, cache_read_tokens=800)
    with Session.create(env.store, cwd=env.workspace) as stored:
        append_chat_turn(stored, "a question", "an answer", usage=usage)
        sid = stored.id
        bills = render_cost(cost_report(stored.events))
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        send(page, "/cost")
        assert note_toast(page) == bills  # the terminal UI's /cost, line by line
        assert bills.startswith("Billed tokens")
        # the terminal UI's words, as the toast shows a line (white space runs as one space)
        assert fresh_note_after(page, "/title") == (
            "Title: a question (/title TEXT renames the session)"
        )
        assert page.evaluate("() => window.dsh.info.open") is False  # read, not resumed
        send(page, "/title Fixing the parser")
        page.wait_for_function(
            "() => document.getElementById('session-title').textContent === 'Fixing the parser'"
        )
        page.wait_for_function(
            """(sid) => [...document.querySelectorAll('.session-item')].some(
                (a) => a.dataset.id === sid && a.textContent.includes('Fixing the parser'))""",
            arg=sid,
        )
        assert note_toast(page) == "Session titled: Fixing the parser"
    last = json.loads(env.log_lines(sid)[-1])
    assert last == {**last, "type": "session/title", "data": {"title": "Fixing the parser"}}


def test_model_names_the_model_and_moves_the_next_turns(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "first answer"}, {"text": "second answer"}]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(env.script))
    server = BackgroundServer(env.app(WebRuntime(env.settings, script=script))).start()
    try:
        with open_page(browser) as page:
            sid = open_new_session(page, server.base_url)
            send(page, "say something")
            wait_turn_over(page, "first answer")
            page.wait_for_function(
                "() => document.getElementById('model').textContent === 'scripted · scripted'"
            )
            assert fresh_note_after(page, "/model") == (
                f"Model: scripted (provider scripted, context window {DEFAULT_CONTEXT_WINDOW} "
                "tokens). /model NAME switches for the next turns."
            )
            assert fresh_note_after(page, "/model bigger-model") == (
                f"Model for the next turns: bigger-model. "
                f"Context window: {DEFAULT_CONTEXT_WINDOW:,} tokens."
            )
            page.wait_for_function(
                "() => document.getElementById('model').textContent === 'scripted · bigger-model'"
            )
            send(page, "and again")
            wait_turn_over(page, "second answer")
    finally:
        server.stop()
    replies = [json.loads(line) for line in env.log_lines(sid)]
    models = [
        e["data"]["message"]["source"]["model"] for e in replies if e["type"] == "assistant/message"
    ]
    assert models == ["scripted", "bigger-model"]


def test_model_takes_a_name_with_spaces_as_the_terminal_ui_does(
    browser: Any, tmp_path: Path
) -> None:
    """``/model NAME`` takes what follows it as the name, spaces inside included (the terminal
    UI's parser, ``dsh.agent.model_command.model_name``)."""
    env = make_env(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "first answer"}]))
    server = BackgroundServer(env.app(WebRuntime(env.settings, script=script))).start()
    try:
        with open_page(browser) as page:
            open_new_session(page, server.base_url)
            assert fresh_note_after(page, "/model  Qwen 7B Instruct ") == (
                f"Model for the next turns: Qwen 7B Instruct. "
                f"Context window: {DEFAULT_CONTEXT_WINDOW:,} tokens."
            )
            page.wait_for_function(
                "() => document.getElementById('model').textContent"
                " === 'scripted · Qwen 7B Instruct'"
            )
            assert fresh_note_after(page, "/model") == (
                "Model: Qwen 7B Instruct (provider scripted, context window "
                f"{DEFAULT_CONTEXT_WINDOW} tokens). /model NAME switches for the next turns."
            )
    finally:
        server.stop()


def test_cost_and_model_answers_stay_in_the_conversation_as_notes_not_logged(
    browser: Any, tmp_path: Path
) -> None:
    """They were toasts that went after a few seconds: now each is a row after the newest, which
    stays (a toast's timer does not touch it), comes before what is sent next, and is the page's
    only (not in the log: a reload does not show it)."""
    env = make_env(tmp_path)
    env.script = [{"text": "first answer"}, {"text": "second answer"}]
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        page.evaluate("() => { window.dsh.toastMs = 1; }")  # a toast would be gone at once
        send(page, "first")
        wait_turn_over(page, "first answer")
        cost = fresh_note_after(page, "/cost")
        assert cost.startswith("Billed tokens")
        model = fresh_note_after(page, "/model")
        assert "scripted" in model
        assert page.is_hidden("#toast")
        send(page, "second")
        wait_turn_over(page, "second answer")
        rows: list[list[str]] = page.evaluate(
            """() => window.dsh.view.allRows().map((r) => [r.className, r.innerText])"""
        )
        notes = [text for kind, text in rows if "local" in kind.split()]
        assert notes == [cost, model]
        kinds = [" ".join(sorted(set(kind.split()) - {"read"})) for kind, _ in rows]
        assert kinds[-4:] == ["local notice row", "local notice row", "row user", "assistant row"]
        page.reload()
        first_page_loaded(page)
        page.wait_for_function(
            "() => window.dsh.view.allRows().some((r) => r.textContent.includes('second answer'))"
        )
        assert page.evaluate("() => document.querySelectorAll('.notice.local').length") == 0
    assert all("Billed tokens" not in line.decode() for line in env.log_lines(sid))
