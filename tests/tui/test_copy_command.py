"""``/copy``: the last reply, or its last code block, to the clipboard (Textual's
``copy_to_clipboard``, OSC 52), with a note saying how much; a note when there is nothing."""

from __future__ import annotations

from typing import Any

from dsh.tui.copy_command import NO_CODE, NO_REPLY, USAGE, last_code_block
from tests.tui.conftest import Rig, run_prompt
from tests.tui.test_pilot import run, text_of

REPLY = """Try this:

```python
def add(a, b):
    return a + b
```

or in the shell:

~~~sh
echo ok
~~~
"""


def copied(app: Any, monkeypatch: Any) -> list[str]:
    texts: list[str] = []
    original = app.copy_to_clipboard

    def record(text: str) -> None:
        texts.append(text)
        original(text)

    monkeypatch.setattr(app, "copy_to_clipboard", record)
    return texts


def test_copy_the_last_reply_and_its_last_code_block(rig: Rig, monkeypatch: Any):
    app = rig.app([{"text": "An older reply."}, {"text": REPLY}])
    texts = copied(app, monkeypatch)

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "first")
        await run_prompt(pilot, "second")
        await run_prompt(pilot, "/copy")
        assert texts == [REPLY]
        assert f"copied {len(texts[0])} characters (the last reply)" in text_of(app)
        await run_prompt(pilot, "/copy code")
        assert texts[-1] == "echo ok" and app.clipboard == "echo ok"
        assert "copied 7 characters (the last code block)" in text_of(app)
        await run_prompt(pilot, "/copy everything")
        assert USAGE in text_of(app) and len(texts) == 2

    run(app, body)


def test_nothing_to_copy_says_so(rig: Rig, monkeypatch: Any):
    app = rig.app([{"text": "No code here."}])
    texts = copied(app, monkeypatch)

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "/copy")
        assert NO_REPLY in text_of(app)
        await run_prompt(pilot, "hello")
        await run_prompt(pilot, "/copy code")
        assert NO_CODE in text_of(app) and texts == []

    run(app, body)


def test_last_code_block():
    assert last_code_block(REPLY) == "echo ok"
    assert last_code_block("```\nfirst\n```\ntext\n````md\n```\ninner\n```\n````") == (
        "```\ninner\n```"
    )
    assert last_code_block("```py\nleft open\nto the end") == "left open\nto the end"
    assert last_code_block("no fences, ``inline`` only") is None
