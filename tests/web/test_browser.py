"""End to end in a real browser (Debian's chromium, headless): the page against a live server
with the keyless scripted provider."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from dsh.events import Message, TextBlock, TurnEndEvent, UserMessageEvent, UserSource
from dsh.surface import Session
from dsh.transcript import MarkerItem, MessageItem, ToolCallItem, ToolResultItem, project
from tests.web.builders import long_session, summary_on_an_older_page
from tests.web.conftest import READ_NOTES, TOKEN, WebEnv, make_env
from tests.web.pages import (
    ARTIFACTS,
    first_page_loaded,
    open_page,
    reveal,
    same_as_one_pass,
    scroll_to_beginning,
    send,
    serve,
    snapshot,
    stored_events,
    view_rows,
    wait_idle,
    wait_turn_over,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ---- the whole conversation -----------------------------------------------------------------


def test_conversation_streams_compacts_and_survives_a_reload(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = list(READ_NOTES)
    env.delay, env.chunk_size = 0.05, 3
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "Please read notes.txt")

        # streamed text: part of the reply is on screen before the message lands
        page.wait_for_function(
            """() => {
                const t = document.querySelector('#live-tail .stream-text').textContent;
                return t.length > 0 && t.length < 'Let me read the notes.'.length;
            }"""
        )
        assert page.locator("#live-tail").is_visible()
        assert page.locator("#log .row.assistant").count() == 0

        # the tool card appears, collapsed, and gets its result
        card = page.locator("#log .row.tool")
        card.wait_for()
        assert card.locator(".tool-name").inner_text() == "read_file"
        page.wait_for_selector("#log .row.tool .tool-status:text-is('done')")
        assert not card.locator(".tool-output").is_visible()
        wait_idle(page)
        assert page.locator("#live-tail").is_hidden()

        # Markdown with highlighted code, reasoning behind a toggle, the header figures
        reply = page.locator("#log .row.assistant").last
        assert reply.locator("strong").inner_text() == "60"
        assert reply.locator("pre code.language-python .hljs-built_in").inner_text() == "print"
        reasoning = page.locator("#log details.reasoning").first
        assert not reasoning.locator(".reasoning-text").is_visible()
        reasoning.locator("summary").click()
        assert reasoning.locator(".reasoning-text").inner_text() == "The user wants the file."
        assert re.fullmatch(r"context \S+ / 4\.0k \(\d+%\)", page.inner_text("#context-use"))
        assert re.fullmatch(r"cache hit \d+%", page.inner_text("#cache-hit"))
        assert page.inner_text("#session-title") == "Please read notes.txt"

        # /compact
        send(page, "/compact")
        page.wait_for_selector("#log .row.marker.manual")
        wait_idle(page)

        sid = page.evaluate("() => window.dsh.sessionId")
        events = stored_events(env, sid)
        done = next(e for e in events if e["type"] == "command/done")
        pass_id = events[done["data"]["sourceEventSeq"]]["data"]["passId"]
        summaries = [
            e
            for e in events
            if e["type"] == "compaction/summary" and e["data"]["passId"] == pass_id
        ]
        tool_output = next(e for e in events if e["type"] == "tool/result")["data"]["message"][
            "content"
        ][0]["content"][0]["text"]

        # the original prompt and the full tool output are still on screen
        rows = page.locator("#log .row")
        kinds = rows.evaluate_all("rows => rows.map(r => r.className)")
        assert kinds.count("row marker manual") == 1 and page.locator(".row.marker").count() == 1
        prompt_row = page.locator("#log .row.user").first
        assert prompt_row.inner_text().endswith("Please read notes.txt")
        assert prompt_row.is_visible()
        card.locator("details.tool-card > summary").click()
        output = card.locator(".tool-output")
        assert output.is_visible() and output.inner_text() == tool_output
        assert "line 59: the quick brown fox" in output.inner_text()

        # exactly one compact row, after them
        marker_at = kinds.index("row marker manual")
        assert kinds.index("row user") < marker_at and kinds.index("row tool") < marker_at
        marker = page.locator("#log .row.marker")
        items = sum(len(s["data"]["shadowedSeqs"]) for s in summaries)
        tokens = sum(s["data"]["shadowedTokenCount"] for s in summaries)
        assert marker.locator(".marker-command").inner_text() == "/compact"
        assert marker.locator(".marker-title").inner_text() == "… earlier context was compacted …"
        assert marker.locator(".marker-stats").text_content() == (
            f"Compacted {items} history items (~{tokens} tokens)"
        )
        assert done["data"]["text"] == f"Compacted {items} history items (~{tokens} tokens)"
        texts = marker.locator(".summary-text")
        assert not texts.first.is_visible()
        marker.locator("details.marker-details > summary").click()
        assert texts.first.is_visible()
        assert texts.all_inner_texts() == [s["data"]["summary"] for s in summaries]
        payload = next(
            e for e in events if e["type"] == "user/message" and e["surfaceOp"] != "append"
        )
        assert payload["data"]["content"][0]["text"][:60] not in page.inner_text("#log")

        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "conversation-after-compact.png"))
        page.evaluate("() => { document.getElementById('conversation').scrollTop = 0; }")
        page.screenshot(path=str(ARTIFACTS / "conversation-top.png"))

        # a reload renders the same view from the log
        assert same_as_one_pass(page)
        assert_projection_parity(page, env, sid)
        before = snapshot(page)
        page.reload()
        first_page_loaded(page)
        after = snapshot(page)
        assert after[1] == before[1]
        assert after[0] == before[0]
        assert page.locator("#log .row.marker.manual").count() == 1


def test_automatic_compaction_shows_the_plain_marker(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path, chunk_tokens=800)  # pressure passes need chunk_tokens/2 of history
    env.window = 3400  # the third round's request is the first over the threshold
    env.script = list(READ_NOTES) * 3
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        for i in range(3):
            send(page, f"read the notes, round {i}")
            page.wait_for_function(
                f"() => document.querySelectorAll('#log .row.user').length === {i + 1}"
            )
            wait_idle(page)
        marker = page.locator("#log .row.marker")
        assert marker.count() == 1
        assert marker.get_attribute("class") == "row marker"  # not a /compact row
        assert marker.locator(".marker-command").count() == 0
        assert marker.locator(".marker-stats").text_content().startswith("Compacted ")
        sid = page.evaluate("() => window.dsh.sessionId")
        start = next(e for e in stored_events(env, sid) if e["type"] == "compaction/start")
        assert start["data"]["turn"] == 3 and "sourceCommandId" not in start["data"]
        assert page.locator("#log .row.user").count() == 3
        assert page.locator("#log .row.tool").count() == 3
        assert same_as_one_pass(page)
        assert_projection_parity(page, env, sid)
        before = snapshot(page)
        page.reload()
        first_page_loaded(page)
        assert snapshot(page) == before


# ---- paging ---------------------------------------------------------------------------------


def test_scrolling_up_loads_older_pages_and_the_marker_renders(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    sid = long_session(env.store, env.workspace, turns=80, compact_after=70)
    events = stored_events(env, sid)
    with serve(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function("() => !window.dsh.loadingOlder")
        oldest = page.evaluate("() => window.dsh.oldestSeq")
        assert page.evaluate("() => window.dsh.hasMore") is True
        assert "Turn 1:" not in page.inner_text("#log")

        # the checkpoint is in this page; the range it replaced is not
        assert len(view_rows(page, ".row.marker")) == 1
        reveal(page, ".row.marker")
        marker = page.locator("#log .row.marker")
        assert marker.count() == 1
        checkpoint = next(
            e for e in events if e["type"] == "user/message" and e["surfaceOp"] != "append"
        )
        assert checkpoint["seq"] >= oldest
        assert checkpoint["surfaceOp"]["start"] < oldest
        assert marker.locator(".marker-stats").text_content().startswith("Compacted ")
        assert marker.locator(".marker-unavailable").count() == 0

        scroll_to_beginning(page)
        assert page.inner_text("#history-status") == "Beginning of the session"
        users = view_rows(page, ".row.user")
        assert len(users) == 80
        assert users[0].strip().endswith("Turn 1: look at module_1.py")
        top = page.locator("#log .row.user").first  # the first block is in the page, on screen
        assert top.inner_text().endswith("Turn 1: look at module_1.py")
        seqs = page.evaluate("() => window.dsh.view.allRows().map(r => +r.dataset.seq)")
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert len(view_rows(page, ".row.marker")) == 1
        assert len(view_rows(page, ".row.tool")) == 80

        # pages fed newest-first build the same DOM as the whole log fed at once
        assert same_as_one_pass(page)


def test_a_marker_without_its_summaries_says_so_until_an_older_page_supplies_them(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    sid = summary_on_an_older_page(env.store, env.workspace)
    with serve(env) as server, open_page(browser, height=600) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        marker = page.locator("#log .row.marker")
        assert marker.locator(".marker-title").inner_text() == "… earlier context was compacted …"
        assert (
            marker.locator(".marker-unavailable").inner_text() == "Compaction summary unavailable"
        )
        assert marker.locator(".marker-stats").count() == 0
        scroll_to_beginning(page)
        assert marker.locator(".marker-unavailable").count() == 0
        assert (
            marker.locator(".marker-stats").text_content()
            == "Compacted 2 history items (~17 tokens)"
        )
        marker.locator("details.marker-details > summary").click()
        assert (
            marker.locator(".summary-text").inner_text() == "STATE SUMMARY TEXT: the first exchange"
        )
        assert "checkpoint payload" not in page.inner_text("#log")
        assert page.locator("#log .row.marker").count() == 1
        assert same_as_one_pass(page)


# ---- the projection port --------------------------------------------------------------------


def python_items(events: list[Any]) -> tuple[list[list[Any]], dict[str, list[int]]]:
    items, details = project(events)
    rows: list[list[Any]] = []
    for item in items:
        if isinstance(item, MessageItem):
            rows.append(["message", item.seq])
        elif isinstance(item, ToolCallItem):
            rows.append(["tool-call", item.seq, item.call_id])
        elif isinstance(item, ToolResultItem):
            rows.append(["tool-result", item.seq, item.call_id, item.card_seq, item.text])
        elif isinstance(item, MarkerItem):
            rows.append(["marker", item.seq, item.pass_id])
    passes = {pass_id: [d.items, d.tokens, *d.summary_seqs] for pass_id, d in details.items()}
    return rows, passes


def assert_projection_parity(page: Any, env: WebEnv, sid: str) -> None:
    """The browser's projector (projection.js) yields the Python projector's items and pass
    details for the whole log of ``sid``."""
    log = env.store.open(sid)
    expected = python_items(list(log.events))
    log.close()
    got = page.evaluate(
        """async (sid) => {
            const { Projector } = await import('/s/projection.js');
            const { api } = await import('/s/api.js');
            const page = await api('GET', `/api/sessions/${sid}/history?max_messages=500`);
            const events = page.events;
            const projector = new Projector();
            const rows = [];
            for (const event of events) {
                for (const change of projector.feed(event)) {
                    if (change.op !== 'add') continue;
                    const i = change.item;
                    const row = {
                        message: [],
                        'tool-call': [i.callId],
                        'tool-result': [i.callId, i.cardSeq, i.text],
                        marker: [i.passId],
                    }[i.kind];
                    if (row) rows.push([i.kind, i.seq, ...row]);
                }
            }
            const passes = {};
            for (const [id, d] of projector.details) {
                passes[id] = [d.items, d.tokens, ...d.summaries.map((s) => s.seq)];
            }
            return [rows, passes];
        }""",
        sid,
    )
    assert got[0] == expected[0]
    assert got[1] == expected[1]


def test_the_browser_projection_matches_the_python_projection(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    sessions = [
        long_session(env.store, env.workspace, turns=30, compact_after=20),
        summary_on_an_older_page(env.store, env.workspace, after=5),
        # every reply numbers its calls from call_0: each result pairs with its own card
        long_session(env.store, env.workspace, turns=12, compact_after=8, call_id="call_0"),
    ]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.wait_for_function("() => window.dsh !== undefined")
        for sid in sessions:
            assert_projection_parity(page, env, sid)


# ---- safety, approvals, progress ------------------------------------------------------------


def test_the_token_leaves_the_address_bar_for_this_origins_storage_never_a_cookie(
    browser: Any, tmp_path: Path
) -> None:
    """A cookie for 127.0.0.1 is sent to every port of it: another local server the browser
    visited would have received the token. The page keeps it in its origin's storage instead."""
    env = make_env(tmp_path)
    log = env.store.create(cwd=str(env.workspace))
    sid = log.id
    log.close()
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        assert page.url == f"{server.base_url}/#s={sid}"  # replaced, the hash kept
        assert page.context.cookies() == []
        page.wait_for_function("() => window.dsh.socket && window.dsh.socket.readyState === 1")
        page.reload()
        first_page_loaded(page)  # the API and the live stream, with the stored token
        page.wait_for_function("() => window.dsh.socket && window.dsh.socket.readyState === 1")
        assert page.url == f"{server.base_url}/#s={sid}"
        second = page.context.new_page()  # another tab of the same origin
        second.goto(f"{server.base_url}/#s={sid}")
        first_page_loaded(second)
        page.go_back()  # the entry before is the blank start page, not a URL with the token
        assert TOKEN not in page.url
        assert page.context.cookies() == []


def test_message_html_is_shown_as_text_and_links_are_safe(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    session = Session.create(env.store, cwd=env.workspace)
    hostile = (
        'Look: <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>\n\n'
        "[click me](javascript:window.__pwned=3) and [docs](https://example.com/docs)"
    )
    session.append(
        Message(id="u-1", role="user", content=(TextBlock(text=hostile),), source=UserSource())
    )
    session.close()
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={session.id}")
        first_page_loaded(page)
        log = page.locator("#log")
        assert log.locator("img, script").count() == 0
        assert '<img src=x onerror="window.__pwned=1">' in log.inner_text()
        hrefs = log.locator("a").evaluate_all(
            "links => links.map(a => [a.getAttribute('href'), a.rel, a.target])"
        )
        assert ["https://example.com/docs", "noopener noreferrer", "_blank"] in hrefs
        assert not any((h or "").startswith("javascript:") for h, _, _ in hrefs)
        assert page.evaluate("() => window.__pwned === undefined")


def test_a_prompt_of_several_lines_keeps_its_line_breaks(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "*one* reply\nin one paragraph"}]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "first line <b>as typed</b>\nsecond line")
        wait_turn_over(page, "one")
        for _ in range(2):  # live, then drawn from the stored log
            prompt = page.locator("#log .row.user .body")
            assert prompt.inner_text() == "first line <b>as typed</b>\nsecond line"
            assert prompt.locator("br").count() == 1 and prompt.locator("b").count() == 0
            reply = page.locator("#log .row.assistant .body")  # replies stay Markdown
            assert reply.inner_text() == "one reply\nin one paragraph"  # with their lines
            assert reply.locator("em").count() == 1 and reply.locator("p").count() == 1
            page.reload()
            first_page_loaded(page)


def test_a_prompt_keeps_its_first_lines_indentation_and_a_path_is_not_a_command(
    browser: Any, tmp_path: Path
) -> None:
    """Only leading blank lines and trailing whitespace go (a pasted indented block is sent as
    pasted); ``/usr/lib/x`` and ``//…`` are prompts; an unknown command stays in the box."""
    env = make_env(tmp_path)
    env.script = [{"text": "one"}, {"text": "two"}, {"text": "three"}]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "\n    x = 1\n    y = 2\n\n")
        wait_turn_over(page, "one")
        send(page, "/usr/lib/libfoo.so is missing")
        wait_turn_over(page, "two")
        send(page, "//compact is a word")
        wait_turn_over(page, "three")
        send(page, "/nonsense here")
        page.locator("#toast").wait_for(state="visible")
        assert "Unknown command /nonsense" in page.locator("#toast").inner_text()
        assert page.input_value("#prompt") == "/nonsense here"
        sid = page.evaluate("() => window.dsh.sessionId")
    with env.store.open(sid) as log:
        prompts = [e.data.text() for e in log.events if isinstance(e, UserMessageEvent)]
    assert prompts == [
        "    x = 1\n    y = 2",
        "/usr/lib/libfoo.so is missing",
        "/compact is a word",
    ]


def test_approvals_are_asked_in_the_page(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo approved-in-browser"}}]},
        {"text": "ran it"},
    ]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "run the command")
        approval = page.locator("#approvals .approval")
        approval.wait_for()
        assert (
            "bash" in approval.inner_text() and "echo approved-in-browser" in approval.inner_text()
        )
        # "always" about a shell call covers that command, and its button says so
        always = approval.locator("button[data-answer='always']").inner_text()
        assert always == "Always allow this command"
        approval.locator("button[data-answer='once']").click()
        approval.wait_for(state="detached")
        wait_idle(page)
        card = page.locator("#log .row.tool")
        card.locator("details.tool-card > summary").click()
        assert "approved-in-browser" in card.locator(".tool-output").inner_text()


def test_stop_cancels_a_turn_waiting_for_an_approval(browser: Any, tmp_path: Path) -> None:
    """Stop shows while a turn runs and cancels it: the run state and Stop go, the composer
    can send again."""
    env = make_env(tmp_path, approval="ask")
    env.script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo never-run"}}]},
        {"text": "unused"},
    ]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "run the command")
        page.locator("#approvals .approval").wait_for()
        assert page.inner_text("#run-state") == "running" and page.is_enabled("#send")  # queues
        page.click("#cancel")
        wait_idle(page)
        assert page.is_hidden("#cancel") and page.is_hidden("#run-state")
        assert page.is_enabled("#send")
        sid = page.evaluate("() => window.dsh.sessionId")
    with env.store.open(sid) as log:
        ends = [e.data.reason.kind for e in log.events if isinstance(e, TurnEndEvent)]
    assert ends == ["aborted"]


def test_compaction_progress_is_shown_while_a_pass_runs(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = list(READ_NOTES)
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "read the notes")
        wait_turn_over(page, "The file has")
        page.evaluate(
            """() => {
                window.progressSeen = [];
                const box = document.getElementById('progress');
                const seen = () => window.progressSeen.push(box.hidden ? '' : box.textContent);
                new MutationObserver(seen).observe(
                    box, { childList: true, characterData: true, subtree: true, attributes: true });
            }"""
        )
        send(page, "/compact")
        page.wait_for_selector("#log .row.marker")
        wait_idle(page)
        page.wait_for_function("() => document.getElementById('progress').hidden")
        seen = [s for s in page.evaluate("() => window.progressSeen") if s]
        # The observer reads the box when its callback runs, so on a loaded machine a short
        # state can be coalesced away; every state it did see must be a progress state.
        assert seen and all(s.startswith("compacting") for s in seen)
        counted = [s for s in seen if s.startswith("compacting · ")]
        assert all(re.fullmatch(r"compacting · \d+ of \d+ regions", s) for s in counted)
