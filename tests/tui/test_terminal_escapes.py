"""Text from outside never reaches the terminal as a control character.

A model's reply and reasoning, a tool's name, arguments and output, a file's name and lines, a
todo, a workspace's path, a session's title, a recorded model's name, a plugin's name, a pasted
draft or a prompt recalled from a log may hold terminal escapes (``ESC ] 0 ;`` sets the
window's title, ``ESC ] 52 ;`` writes the clipboard, ``ESC [ 2 J`` clears the screen, ``\\x9b``
is the one-byte CSI), a carriage return or a backspace that overwrite what was drawn, or a bidi
override that reorders it. Textual draws a widget's text as it is given, so each of these
reaches the terminal unless dsh makes it harmless first: the transcript drops escape sequences
and control characters (``dsh.tui.wrap.sanitize``), everything else shows them as their Python
escape (``\\x1b``), and a bidi control shows as its escape everywhere.

Where it is observed: the bytes the terminal would be sent. The headless driver of
``App.run_test`` writes nothing, so the tests compute what ``App._display`` hands a real driver
for a full repaint of the screen on top: ``screen._compositor.render_update(full=True,
screen_stack=app._background_screens).render_segments(app.console)`` (the update Textual's own
screenshot makes, with a modal drawn over the screens under it). From that string the
sequences Textual itself writes are removed (the styling, ``ESC [ … m``; the cursor move
starting each line, ``ESC [ row ; col H``; the newline between lines) and no C0 or C1 control,
DEL or bidi control may be left. The transcript draws only the rows on screen, so it is read a
page at a time from its top to its end.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from typing import Any

import msgspec
from textual import events

from dsh.agent import session_settings
from dsh.errors import printable_line
from dsh.events import (
    AssistantMessage,
    Message,
    PluginSource,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnEndReason,
    TurnStart,
)
from dsh.llm.types import Finish, ModelRequest
from dsh.surface import Session
from dsh.tui import DshApp
from dsh.tui.approval import ApprovalScreen
from dsh.tui.find import FindInput
from dsh.tui.picker import SessionPicker
from tests.helpers import (
    append_chat_turn,
    assistant_message,
    next_turn,
    tool_call_block,
    tool_result_message,
)
from tests.tui.conftest import Rig, approval_ready, settle, submit

HOSTILE = "\x1b]0;PWNED\x07\x1b]52;c;aGk=\x07\x1b[2J\x9b31m\r\x08\u202e"
"""A window title, a clipboard write, a clear screen, a C1 CSI, a carriage return, a backspace
and a right-to-left override."""
SHOWN = printable_line(HOSTILE)
"""``HOSTILE`` as a one-line field shows it: ``\\x1b]0;PWNED\\x07…`` (the return as a space)."""
SANITIZED = r"31m\u202e"
"""``HOSTILE`` as the transcript shows it (``sanitize``: escapes dropped, the override shown)."""

TEXTUAL_OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\d+;\d+H|\n")
"""What Textual writes itself around a screen's text: styles, the move to each line's start,
the newline between lines."""
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls, DEL, and the bidi controls (Unicode's Bidi_Control)."""
SIZE = (110, 40)


def terminal_bytes(app: DshApp) -> str:
    """What a full repaint of the screen on top writes to the terminal (see the module)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    assert update is not None
    return update.render_segments(app.console)


def screen_text(app: DshApp, where: str) -> str:
    """The screen's text, after checking that what it writes holds no control of its own."""
    shown = TEXTUAL_OWN.sub("", terminal_bytes(app))
    found = [repr(shown[max(0, m.start() - 30) : m.end() + 10]) for m in CONTROL.finditer(shown)]
    assert not found, f"{where}: a control reaches the terminal: {found[:6]}"
    return shown


async def every_page(pilot: Any, where: str) -> str:
    """The text of every page of the transcript, each checked as ``screen_text`` does."""
    app, view = pilot.app, pilot.app.transcript
    view.scroll_home(animate=False)
    await pilot.pause()
    pages, top = [], -1
    while round(view.scroll_y) != top:  # until a page down moves no more
        top = round(view.scroll_y)
        pages.append(screen_text(app, f"{where}, transcript row {top}"))
        view.scroll_page_down(animate=False)
        await pilot.pause()
    view.follow_end()
    await pilot.pause()
    return "\n".join(pages)


async def allow_each_call(pilot: Any, where: str) -> int:
    """Until the running turn (or ``!cmd``) ends, read the screen of each approval prompt and
    allow the call once; returns how many prompts there were."""
    app, asked = pilot.app, 0
    while True:
        await settle(pilot, lambda: isinstance(app.screen, ApprovalScreen) or not app.running)
        prompt = app.screen
        if not isinstance(prompt, ApprovalScreen):
            return asked
        await approval_ready(pilot)
        screen_text(app, f"{where}, approval prompt {asked}")
        asked += 1
        await pilot.press("o")
        await settle(pilot, lambda answered=prompt: app.screen is not answered)


class HeldReply:
    """The scripted model, holding its first reply before its end until ``release`` is set
    (the test reads the screen while the reply is still streaming)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def stream(self, request: ModelRequest, *, history: Any) -> Any:
        async for event in self.inner.stream(request, history=history):
            if isinstance(event, Finish) and not self.release.is_set():
                self.held.set()
                await self.release.wait()
            yield event


def hostile_script() -> list[dict[str, Any]]:
    markdown = (
        f"# Heading {HOSTILE}\n\n- item {HOSTILE}\n\n```python\nx = '{HOSTILE}'\n```\n\n"
        f"[link {HOSTILE}](https://example.com/a) and `code {HOSTILE}`"
    )
    printed = f"printf '%s' {shlex.quote(HOSTILE)}"
    return [
        {
            "text": markdown,
            "reasoning": f"thinking {HOSTILE}",
            "toolCalls": [
                {"name": "read_file", "arguments": {"path": f"f{HOSTILE}.txt"}},
                {"name": "glob", "arguments": {"pattern": "*"}},
                {"name": "grep", "arguments": {"pattern": "PWNED"}},
                {"name": "todo_write", "arguments": {"todos": [{"content": HOSTILE}]}},
                {"name": f"tool{HOSTILE}", "arguments": {"x": HOSTILE}},
                {"name": "bash", "arguments": {"command": printed}},
                {
                    "name": "edit_file",
                    "arguments": {"path": f"f{HOSTILE}.txt", "old": "line", "new": HOSTILE},
                },
                {
                    "name": "write_file",
                    "arguments": {"path": f"g{HOSTILE}.txt", "content": HOSTILE},
                },
            ],
        },
        {"text": f"plain {HOSTILE}"},
    ]


def hostile_rig(rig: Rig) -> Rig:
    """The rig's workspace is a directory whose name is ``HOSTILE``, holding a file so named."""
    rig.workspace = rig.workspace.parent / f"ws{HOSTILE}"
    rig.workspace.mkdir()
    (rig.workspace / f"f{HOSTILE}.txt").write_text(f"line {HOSTILE}\n")
    return rig


def test_a_turn_full_of_terminal_escapes_sends_none_to_the_terminal(rig: Rig) -> None:
    """The opening notes, the streaming reply, each approval prompt (a command, a file's diff),
    the cards collapsed and expanded with the reasoning shown (Markdown, files, a todo, an
    unknown tool), every command's answer, ``!cmd``, ``/model``, a paste into the find bar and
    into the composer, the completion hint and the sessions picker."""
    rig = hostile_rig(rig)
    held: list[HeldReply] = []

    def hold(inner: Any) -> HeldReply:
        held.append(HeldReply(inner))
        return held[0]

    app = rig.app(
        hostile_script(),
        approval="ask",
        route_notice=f"the server says {HOSTILE}",
        wrap_provider=hold,
    )

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            screen_text(app, "the opening screen")
            app.transcript.set_show_reasoning(True)
            await submit(pilot, f"hi {HOSTILE}")
            await settle(pilot, lambda: held[0].held.is_set())
            await pilot.pause()
            assert SANITIZED in screen_text(app, "the streaming reply")
            held[0].release.set()
            assert await allow_each_call(pilot, "the turn") == 3  # bash, edit_file, write_file
            await pilot.pause()
            await every_page(pilot, "the cards collapsed")
            for index, block in enumerate(app.transcript.model.blocks):
                if block.expandable:
                    app.transcript.toggle(index)
            await pilot.pause()
            assert SANITIZED in await every_page(pilot, "the cards expanded")

            commands = ["/context", "/cost", f"/title {HOSTILE}", "/title", "/resume", "/help"]
            for line in [*commands, "/warnings", f"/model {HOSTILE}", f"!printf '%s' x{HOSTILE}"]:
                await submit(pilot, line)
                await allow_each_call(pilot, repr(line))
            await pilot.pause()
            await every_page(pilot, "the commands' answers")

            for pasted in ("into the empty find bar", "over the needle it selects"):
                app.action_find()  # a needle left from before is selected
                await pilot.pause()
                app.post_message(events.Paste(f"PWNED{HOSTILE}"))
                await pilot.pause()
                screen_text(app, f"a paste {pasted}")
                app.query_one(FindInput).action_close()
                await pilot.pause()

            app.post_message(events.Paste(f"pasted {HOSTILE}"))
            await pilot.pause()
            assert r"pasted \x1b]0;PWNED\x07" in screen_text(app, "a pasted draft")
            app.prompt_box.clear()

            app.prompt_box.value = "@"
            await pilot.press("tab")
            await pilot.pause()
            screen_text(app, "the completion hint")
            app.prompt_box.clear()

            await submit(pilot, "/sessions")
            await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
            await pilot.pause()
            screen_text(app, "the sessions picker")

    asyncio.run(main())


def append_foreign_turn(session: Session) -> None:
    """Turns as a log from elsewhere may hold them: a prompt, a plugin's context message, a
    reply cut off by a failure whose code is hostile, an edit whose logged diff starts a line
    with ESC, and a model's name."""
    append_chat_turn(session, f"recalled {HOSTILE}", f"reply {HOSTILE}")
    turn = next_turn(session)
    session.append(TurnStart(turn=turn))
    session.append(StepStart(turn=turn, step=1))
    session.append(
        Message(
            id="ctx-1",
            role="user",
            content=(TextBlock(text=f"injected {HOSTILE}"),),
            source=PluginSource(plugin=f"plugin{HOSTILE}"),
        )
    )
    call = tool_call_block("call-x", "edit_file", '{"path": "p.txt", "old": "a", "new": "b"}')
    session.append(
        AssistantMessage(
            turn=turn, step=1, message=assistant_message(f"cut {HOSTILE}", tool_calls=[call])
        )
    )
    logged = session.append(
        ToolCall(turn=turn, step=1, call_id=call.id, name=call.name, arguments=call.arguments)
    )
    diff = ["--- a/p.txt", "+++ b/p.txt", "@@ -1 +1 @@", f"{HOSTILE}", f"-a{HOSTILE}", "+b"]
    session.append(
        ToolResult(
            turn=turn,
            step=1,
            message=tool_result_message(call.id, "edited"),
            meta={"diff": diff},
        ),
        source_event_seqs=[logged.seq],
    )
    session.append(StepEnd(turn=turn, step=1))
    session.append(StepStart(turn=turn, step=2))
    session.append(
        AssistantMessage(
            turn=turn,
            step=2,
            message=assistant_message(f"cut {HOSTILE}"),
            interrupted=True,
            error_code=f"CODE{HOSTILE}",
        )
    )
    session.append(StepEnd(turn=turn, step=2))
    session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))
    recorded = session_settings.latest(session)
    assert recorded is not None
    session.append(msgspec.structs.replace(recorded, model=f"model{HOSTILE}"))


def test_a_stored_session_full_of_terminal_escapes_opens_without_sending_one(rig: Rig) -> None:
    """A log from elsewhere reopened: its context message, cut reply, logged diff, recorded
    model (the status bar), a prompt recalled into the composer, and its workspace (the
    picker)."""
    rig = hostile_rig(rig)
    first = rig.app([{"text": f"hello {HOSTILE}"}])

    async def live() -> None:
        async with first.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: first.ready)
            await submit(pilot, f"hi {HOSTILE}")
            await settle(pilot, lambda: not first.running and first.controller.session is not None)

    asyncio.run(live())
    session_id = first.last_session_id
    assert session_id is not None
    with Session.open(rig.store, session_id, writable=True) as session:
        append_foreign_turn(session)

    app = rig.app([], resume=session_id)
    app.first_page_from = 0  # the newest page first, then the whole log

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await pilot.pause()
            assert SHOWN in screen_text(app, "the status bar")
            await every_page(pilot, "the reopened session")
            for index, block in enumerate(app.transcript.model.blocks):
                if block.expandable:
                    app.transcript.toggle(index)
            await pilot.pause()
            await every_page(pilot, "its cards expanded")
            await pilot.press("up")
            await pilot.pause()
            assert r"recalled \x1b]0;PWNED\x07" in screen_text(app, "a recalled prompt")
            app.prompt_box.clear()
            await submit(pilot, "/sessions")
            await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
            await pilot.pause()
            screen_text(app, "the sessions picker")

    asyncio.run(main())
