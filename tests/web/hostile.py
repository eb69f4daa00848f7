"""Hostile text for the web page's injection tests: payloads that would run script, load
something or break out of an attribute if the page ever put text from outside into markup, and
a stored session holding them in every field the page shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh.events import (
    AssistantMessage,
    CommandDone,
    CommandRun,
    Message,
    PluginSource,
    SessionTitle,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCall,
    ToolErrorInfo,
    ToolResult,
    TurnEnd,
    TurnEndReason,
    TurnStart,
)
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tui.wrap import BIDI_CONTROLS
from tests.helpers import (
    assistant_message,
    compaction_bracket,
    tool_call_block,
    tool_result_message,
    user_message,
)

RLO = "\u202e"
"""RIGHT-TO-LEFT OVERRIDE: what follows it on its line draws reversed."""

PAYLOADS = (
    "<img src=x onerror=window.__pwned=1>",
    "<script>window.__pwned=2</script>",
    '"><svg onload=window.__pwned=3>',
    "'><iframe srcdoc='<script>parent.__pwned=4</script>'></iframe>",
    "</textarea><img src=x onerror=window.__pwned=5>",
    '<a href="javascript:window.__pwned=6">a-link</a>',
    f"bidi {RLO}gnp.exe",
)
HOSTILE = " ".join(PAYLOADS)
"""Every payload in one line (a field shows it whole, as text)."""

MARKDOWN = "\n\n".join(
    [
        *PAYLOADS,
        "[js-link](javascript:window.__pwned=7)",
        "[JS-upper]( JAVASCRIPT:window.__pwned=8 )",
        "[entity-link](&#106;avascript:window.__pwned=9)",
        "[tab-link](java\tscript:window.__pwned=10)",
        "[vb-link](vbscript:msgbox(1))",
        "[data-link](data:text/html,<script>window.__pwned=11</script>)",
        "![data-image](data:image/svg+xml,<svg onload=window.__pwned=12>)",
        "![js-image](javascript:window.__pwned=13)",
        "<javascript:window.__pwned=14>",
        "[ref-link][r]\n\n[r]: javascript:window.__pwned=15",
        '[title-link](https://example.com/t "a\\" onmouseover=window.__pwned=16 x=\\"")',
        "<details open ontoggle=window.__pwned=17>details-tag</details>",
        "<style>body{display:none}</style>",
        "&lt;script&gt;window.__pwned=18&lt;/script&gt; and &#60;b&#62;",
        '```js" onmouseover="window.__pwned=19\nfenced <img src=x onerror=window.__pwned=20>\n```',
        "```html\n<script>window.__pwned=21</script>\n```",
        "| <img src=x onerror=window.__pwned=22> | b |\n|---|---|\n| c | d |",
        "[safe-link](https://example.com/docs)",
    ]
)
"""A reply that tries each way Markdown (or raw HTML in it) could run script or load from
elsewhere; ``window.__pwned`` is set by any that runs."""

EDIT_PATH = f"src/{HOSTILE}.py"
DIFF_LINES = [
    f"--- a/{EDIT_PATH}",
    f"+++ b/{EDIT_PATH}",
    "@@ -1,2 +1,2 @@",
    f" keep {PAYLOADS[0]}",
    f"-old {PAYLOADS[1]}",
    f"+new {PAYLOADS[2]}",
    f"\\ {PAYLOADS[4]}",
]


def _turn(session: Session, turn: int, prompt: str) -> None:
    session.append(TurnStart(turn=turn))
    session.append(StepStart(turn=turn, step=1))
    session.append(user_message(prompt))


def hostile_session(store: EventStore, cwd: Path) -> str:
    """A stored session with hostile text in every field the page shows: its title, a prompt,
    a reply (Markdown) and its reasoning, tool names, arguments (bash, edit_file with a logged
    diff, write_file, todo_write, another tool's keys and values, arguments that are not JSON),
    results (an error's too), injected context's plugin name, a compaction's summary and the
    /compact focus, a command's note and a failed turn's error."""
    session = Session.create(store, cwd=cwd)
    session.append(SessionTitle(title=HOSTILE))
    _turn(session, 1, f"{HOSTILE}\n{MARKDOWN}")
    calls = [
        ("bash", {"command": f"echo {HOSTILE}", "timeout": 5}),
        ("edit_file", {"path": EDIT_PATH, "old": f"old {PAYLOADS[1]}", "new": f"new {HOSTILE}"}),
        ("write_file", {"path": f"{HOSTILE}.html", "content": f"{HOSTILE}\n{PAYLOADS[1]}\n"}),
        (
            "todo_write",
            {"todos": [{"content": HOSTILE, "status": f"pending {PAYLOADS[2]}"}]},
        ),
        (f"mcp__{PAYLOADS[0]}", {HOSTILE: HOSTILE, "n": [HOSTILE]}),
        (PAYLOADS[2], f"not json {HOSTILE}"),
    ]
    blocks = [
        tool_call_block(f"call-{i}", name, args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(calls)
    ]
    reply = assistant_message(MARKDOWN, tool_calls=blocks, reasoning=f"{HOSTILE}\n{MARKDOWN}")
    session.append(AssistantMessage(turn=1, step=1, message=reply))
    for i, block in enumerate(blocks):
        call = session.append(
            ToolCall(turn=1, step=1, call_id=block.id, name=block.name, arguments=block.arguments)
        )
        failed = i == len(blocks) - 1
        meta: dict[str, Any] | None = {"diff": DIFF_LINES} if block.name == "edit_file" else None
        session.append(
            ToolResult(
                turn=1,
                step=1,
                message=tool_result_message(block.id, f"result {HOSTILE}", is_error=failed),
                error=ToolErrorInfo(name=f"E{PAYLOADS[0]}", code="X") if failed else None,
                meta=meta,
            ),
            source_event_seqs=[call.seq],
        )
    session.append(StepEnd(turn=1, step=1))
    session.append(TurnEnd(turn=1, reason=TurnEndReason(kind="completed")))
    injected = Message(
        id="plugin-1",
        role="user",
        content=(TextBlock(text=f"context {HOSTILE}\n\n{MARKDOWN}"),),
        source=PluginSource(plugin=HOSTILE),
    )
    _turn(session, 2, "second prompt")
    session.append(injected)
    answer = session.append(
        AssistantMessage(turn=2, step=1, message=assistant_message(f"second {HOSTILE}"))
    ).seq
    session.append(StepEnd(turn=2, step=1))
    session.append(TurnEnd(turn=2, reason=TurnEndReason(kind="error", error=HOSTILE)))
    session.append(CommandRun(command_id="k1", name="compact", args=HOSTILE))
    _, summary, _, _ = compaction_bracket(session, [answer], f"summary {HOSTILE}")
    session.append(CommandDone(command_id="k1", ok=True, text=HOSTILE, source_event_seq=summary))
    session.append(CommandRun(command_id="k2", name=PAYLOADS[0], args=HOSTILE))
    session.append(CommandDone(command_id="k2", ok=False, text=f"note {HOSTILE}"))
    session.close()
    return session.id


def shown(text: str) -> str:
    """``text`` as the page draws it: each bidi control as its escape, as the terminal UI
    shows one (``dsh.tools.terminal_text.BIDI_CONTROLS``)."""
    return "".join(ascii(c)[1:-1] if ord(c) in BIDI_CONTROLS else c for c in text)


WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (event) => {
  window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""
"""An init script: every Content-Security-Policy violation (something the page's own code
would never do: an inline script or handler, a load from elsewhere) kept in
``window.__violations``."""

INERT = r"""(allowed) => {
  const problems = [];
  const say = (what) => problems.push(what);
  if (window.__pwned !== undefined) say(`a payload ran: __pwned = ${window.__pwned}`);
  for (const v of window.__violations || []) say(`CSP violation: ${v}`);
  const bidi = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
  const urls = new Set(['href', 'src', 'srcset', 'action', 'formaction', 'srcdoc', 'xlink:href',
    'poster', 'data', 'background']);
  const rows = window.dsh && window.dsh.view ? window.dsh.view.allRows() : [];
  const inRows = rows.flatMap((r) => [r, ...r.querySelectorAll('*')]);
  for (const node of [...document.querySelectorAll('*'), ...inRows]) {
    for (const attr of node.attributes) {
      const where = `<${node.tagName.toLowerCase()} ${attr.name}="${attr.value.slice(0, 60)}">`;
      if (/^on/i.test(attr.name)) say(`attribute ${where}`);
      if (attr.name === 'style' && node.closest('.md')) say(`attribute ${where}`);
      const safe = allowed.some((prefix) => attr.value.startsWith(prefix));
      if (urls.has(attr.name) && !safe) say(`URL ${where}`);
      if (bidi.test(attr.value)) say(`bidi control in ${where}`);
    }
  }
  const outside = ['#log', '#approvals', '#context-body', '#warnings-list', '#warning-toasts',
    '#toast', '#session-list', '#live-tail', '#header'];
  const tags = ['script', 'iframe', 'frame', 'object', 'embed', 'svg', 'math', 'style', 'link',
    'meta', 'base', 'form', 'input', 'textarea', 'select', 'video', 'audio', 'source'];
  for (const region of [...document.querySelectorAll(outside.join(', ')), ...rows]) {
    const name = region.id ? `#${region.id}` : 'a row';
    for (const bad of region.querySelectorAll(tags.join(', '))) {
      say(`element <${bad.tagName.toLowerCase()}> in ${name}`);
    }
    if (region.id === 'header') continue;  // the page's own buttons
    for (const named of region.querySelectorAll('[id], [name]')) {
      say(`id or name on <${named.tagName.toLowerCase()}> in ${name}`);
    }
  }
  for (const root of [document.body, ...rows.filter((r) => !r.isConnected)]) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      if (text.parentElement.closest('.sr-only')) continue;  // read out, never drawn
      if (bidi.test(text.nodeValue)) say(`bidi control drawn: "${text.nodeValue.slice(0, 60)}"`);
    }
  }
  return problems;
}"""
"""What the page holds that it should not, were text from outside ever taken as markup: a
payload that ran, a CSP violation, an event-handler attribute (a style one in a message), a URL
other than the ``allowed`` prefixes, an element only a message could have brought, an ``id`` or
``name`` (DOM clobbering), a bidi control drawn as it is (rows parked out of the page
included; what only a screen reader reads out is never drawn)."""

SAME_ORIGIN_URLS = ["/s/", "#s=", "#composer", "data:,", "https://example.com/"]
"""The URLs the page may hold: its own files, its session links, its "Skip to composer" link,
the empty icon, and the one safe link the hostile Markdown has."""


def problems(page: Any) -> list[str]:
    found: list[str] = page.evaluate(INERT, SAME_ORIGIN_URLS)
    return found
