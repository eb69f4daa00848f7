"""Text the log can hold, made from text it cannot.

A Python string may hold UTF-16 surrogates that UTF-8 cannot encode: a file name of non-UTF-8
bytes (PEP 383 decodes each bad byte to ``\\udc80``–``\\udcff``), or a model reply whose JSON
carried ``"\\ud83d"`` (half of an emoji, or both halves in two stream chunks). The codec refuses
such an event, which used to stop the turn between its events (a tool call without its result, a
reply lost). The loop passes what it logs through here first: a split pair is joined into its
character, a byte a path carried shows as ``\\xff``, any other half becomes U+FFFD. Valid text
comes back unchanged (the same object), so this costs one encode check per logged text.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from dsh.events import Message

_SURROGATES = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def _repair(match: re.Match[str]) -> str:
    found = match.group()
    if len(found) == 2:  # a pair split across pieces of text: the character it encodes
        high, low = ord(found[0]) - 0xD800, ord(found[1]) - 0xDC00
        return chr(0x10000 + (high << 10) + low)
    code = ord(found)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (PEP 383 surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return "\ufffd"


def loggable_text(text: str) -> str:
    """``text`` with every surrogate made encodable (``text`` itself when it already is)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub(_repair, text)
    return text


def loggable_value(value: Any) -> Any:
    """A JSON-like value (a tool result's meta) with every string made loggable."""
    if isinstance(value, str):
        return loggable_text(value)
    if isinstance(value, dict):
        return {
            loggable_text(k) if isinstance(k, str) else k: loggable_value(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(loggable_value(item) for item in value)
    return value


def loggable_message(message: Message) -> Message:
    """``message`` with every string in it made loggable (``message`` itself when it is)."""
    try:
        msgspec.json.encode(message)
    except UnicodeEncodeError:
        return msgspec.convert(loggable_value(msgspec.to_builtins(message)), Message)
    return message
