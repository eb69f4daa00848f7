"""Streamed answer text for a face that cannot take it back: ``dsh run``'s stdout on a terminal
and its ``--json-stream`` ``text_delta`` lines (docs/local-models.md, "Reasoning that ends in a
lone </think>").

A model served with a chat template that opened the ``<think>`` block in the prompt writes its
reasoning as plain content and closes it with a lone ``</think>``; until that tag (or a tool
call, the server's own reasoning, a ``<think>`` mention, the reply's end) the stream cannot say
whether the text is reasoning, so the splitter gives it ``provisional``
(``dsh.llm.stream_repair.ThinkSplitter``). The terminal UI and the web show it as it comes and
move it to the reasoning when ``TextWasReasoning`` says so; what is printed cannot be moved.

The rule here: provisional text is held back (not printed) only for an endpoint known to write
a lone ``</think>``: one this process has seen write one, or one remembered in
``<home>/cache/lone-think.json`` (``EndpointMemory``: its base URL, or provider, and model,
learnt the first time). Held text is dropped when the tag makes it reasoning, and printed the
moment the splitter decides it is the answer (any text, reasoning or tool call not
provisional, the reply's end, or its call logged). Every other endpoint streams at once, as
before; the first lone ``</think>`` of an endpoint not yet known finds its reasoning already
printed, and the face says so (``retracted``) and remembers the endpoint. Holding costs nothing
for a reply that opens with ``<think>`` or whose server sends its reasoning apart (its text is
never provisional); a reply of a known endpoint that does not reason is printed when it ends.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from dsh.config import redact
from dsh.config.file_update import replace_file, update_lock
from dsh.config.private_dirs import make_private_directory
from dsh.llm.types import StreamEvent, TextDelta, TextWasReasoning

log = logging.getLogger("dsh.cli")

MEMORY_FILE = "lone-think.json"
"""Under ``<home>/cache``: the endpoints known to write a lone ``</think>``."""
MAX_REMEMBERED = 200
"""The most endpoints the memory keeps (the latest learnt)."""


def endpoint_key(provider: str, base_url: str | None, model: str) -> str:
    """What an endpoint is remembered by: its server (the base URL, without the credentials
    it may carry, ``dsh.config.redact``; else the provider's name) and its model."""
    return f"{redact(base_url) or provider} {model}"


class EndpointMemory:
    """The endpoints known to write a lone ``</think>`` (``<home>/cache/lone-think.json``):
    whether ``key``'s is one, and learning that it is. A file that cannot be read is no
    endpoint known; one that cannot be written keeps the knowledge for this process only."""

    def __init__(self, home: Path, key: str) -> None:
        self.path = Path(home) / "cache" / MEMORY_FILE
        self.key = key
        self.known = key in self._read()

    def _read(self) -> list[str]:
        try:
            value = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        endpoints = value.get("endpoints") if isinstance(value, dict) else None
        if not isinstance(endpoints, list):
            return []
        return [item for item in endpoints if isinstance(item, str)]

    def learn(self) -> None:
        """``key``'s endpoint wrote a lone ``</think>``: remember it (once). The file is read
        and replaced under its update lock (``dsh.config.file_update``), so endpoints learnt
        by other processes at the same moment are kept."""
        if self.known:
            return
        self.known = True
        try:
            make_private_directory(self.path.parent)
            with update_lock(self.path):
                endpoints = [item for item in self._read() if item != self.key] + [self.key]
                body = json.dumps({"endpoints": endpoints[-MAX_REMEMBERED:]}, indent=1) + "\n"
                replace_file(self.path, body.encode("utf-8"), 0o644)
        except OSError as exc:
            log.debug("could not remember %s in %s: %s", self.key, self.path, exc)


@dataclass(frozen=True, slots=True)
class Shown:
    """What a stream event lets a face that cannot take text back show."""

    text: str = ""
    """Answer text to print now."""
    retracted: bool = False
    """Text printed already was reasoning (a lone ``</think>`` closed it): say so."""


class HeldText:
    """The rule above, for one face: ``feed`` each stream event, ``release`` when the call's
    end is logged (a reply cut short ends without a last stream event)."""

    def __init__(self, memory: EndpointMemory | None = None) -> None:
        self.memory = memory
        self._hold = memory is not None and memory.known
        self._held: list[str] = []
        self._printed = False
        """Provisional text of the streaming reply was printed (not held), blanks aside."""

    def feed(self, event: StreamEvent) -> Shown:
        if isinstance(event, TextWasReasoning):  # what was held, or printed, was reasoning
            retracted, self._printed, self._held = self._printed, False, []
            self._hold = True
            if self.memory is not None:
                self.memory.learn()
            return Shown(retracted=retracted)
        if isinstance(event, TextDelta) and event.provisional:
            if self._hold:
                self._held.append(event.text)
                return Shown()
            self._printed = self._printed or bool(event.text.strip())
            return Shown(event.text)
        text = self.release()  # anything else: the splitter has decided, the text is answer
        if isinstance(event, TextDelta):
            text += event.text
        return Shown(text)

    def release(self) -> str:
        """The text held, as answer (the reply's call ended, or the splitter decided)."""
        held, self._held, self._printed = "".join(self._held), [], False
        return held
