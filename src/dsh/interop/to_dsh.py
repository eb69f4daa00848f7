"""One TypeScript-harness event (a JSON dict, packed rows already expanded) → one dsh event dict.

Every upstream event becomes exactly one dsh event with the same seq, so ``sourceEventSeqs`` and
replace endpoints stay valid unchanged. What differs (see docs/interop.md):

- tool results are ``role: "user"`` upstream, ``role: "tool"`` here;
- ``compaction/summary.summary`` / ``rawOutput`` are content-block arrays upstream (joined text
  here) and ranges are ``{start, end}`` (``[s, e]`` here); ``maxTokens`` and ``sourceCommandId``
  on the summary have no field here (the bracket's start keeps ``sourceCommandId``);
- stream chunks: ``text-delta`` / ``reasoning-delta`` / ``tool-call-delta`` map to dsh chunks, a
  ``finish`` carrying a failure becomes ``request/error``; ``block-start``, ``block-end``,
  ``usage`` and successful ``finish`` chunks are kept opaque;
- sources: extra fields (``rpcId``, ``sections``, ``replayState``…) are dropped, the
  ``agent-instructions`` kind becomes ``plugin: "agent-instructions"``;
- an event type dsh does not know is kept as an opaque ignorable event (``"foreign": true``
  records that the import added ``ignorable``) — unless it changes the surface, which refuses the
  import. A known log-only type whose shape differs is kept opaque as ``upstream:<type>``.

Every lossy step is counted in ``notes`` (the import report lists them).

A foreign log is untrusted input of any shape: each value is checked for the JSON type it is
read as (an object, an array, text) where it is read, with :func:`_object`, :func:`_array` and
:func:`_text`, so a field of the wrong type is a :class:`MappingError` naming it (the import
refuses in one line) and never a Python error from a ``.get`` or a loop over it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from dsh.events import EVENT_CLASS_BY_TYPE

Json = dict[str, Any]
Notes = Counter[str]

FOREIGN_MARK = "foreign"
"""Envelope key on an opaque event whose ``ignorable`` was added by the import."""
RENAMED_PREFIX = "upstream:"
"""Type prefix of an upstream event of a dsh type kept opaque (its shape did not fit)."""
SOFT_TYPES = frozenset({"todo/write", "command/run", "command/done", "llm/retry", "session/title"})
"""Known log-only types kept opaque (renamed) when their upstream shape does not fit dsh's."""
DSH_ONLY_TYPES = frozenset({"compaction/plan", "session/settings"})
"""dsh types the upstream reader does not know; export marks them ignorable, import clears it."""
SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})
ENVELOPE_FIELDS = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable")


class MappingError(ValueError):
    """An upstream event that cannot become a dsh event (the import refuses)."""


_JSON_TYPES = {dict: "an object", list: "an array", str: "text", bool: "a boolean"}


def json_type(value: Any) -> str:
    """The JSON name of a value's type, for a message: ``an array``, ``a number``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _object(value: Any, where: str) -> Json:
    """``value`` if it is a JSON object, else a MappingError naming ``where``."""
    if not isinstance(value, dict):
        raise MappingError(f"{where} must be an object, not {json_type(value)}")
    return value


def _array(value: Any, where: str) -> list[Any]:
    """``value`` if it is a JSON array (an absent one, ``None``, is empty), else a
    MappingError naming ``where``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MappingError(f"{where} must be an array, not {json_type(value)}")
    return value


def _text(value: Any, where: str) -> str | None:
    """``value`` if it is text or absent (``None``), else a MappingError naming ``where``: a
    name looked up in a table (a kind, a block type) must be text."""
    if value is not None and not isinstance(value, str):
        raise MappingError(f"{where} must be text, not {json_type(value)}")
    return value


# ---- messages -------------------------------------------------------------------------------


def _text_of(value: Any, where: str) -> str:
    """A string, or the text blocks of a content-block array joined (upstream summaries)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if not isinstance(block, dict) or block.get("type") != "text":
                raise MappingError(f"{where} holds a {_kind(block)} block; only text is expected")
            parts.append(str(block.get("text", "")))
        return "".join(parts)
    raise MappingError(f"{where} must be text or a list of text blocks, not {json_type(value)}")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return repr(value.get("type", "untyped"))
    return type(value).__name__


def _keep(obj: Json, fields: tuple[str, ...], where: str, notes: Notes) -> Json:
    """The known fields of an object; every other field is counted as dropped."""
    _object(obj, where)
    for key in obj:
        if key not in fields:
            notes[f"dropped field {where}.{key}"] += 1
    return {k: obj[k] for k in fields if k in obj}


def _text_only(obj: Json, fields: tuple[str, ...], where: str, notes: Notes) -> Json:
    """``obj`` without those of ``fields`` that are not text (each counted as dropped)."""
    for key in fields:
        if obj.get(key) is not None and not isinstance(obj[key], str):
            del obj[key]
            notes[f"dropped field {where}.{key} (not text)"] += 1
    return obj


def _block(block: Any, notes: Notes) -> Json:
    if not isinstance(block, dict):
        raise MappingError(f"content block {block!r} is not an object")
    kind = _text(block.get("type"), "content block type")
    if kind == "text":
        return {"type": kind, **_keep(block, ("type", "text"), "text block", notes)}
    if kind == "reasoning":  # a signature and redacted reasoning: what dsh's own export wrote
        out = _keep(block, ("type", "text", "signature", "redacted"), "reasoning block", notes)
        return {
            "type": kind,
            **_text_only(out, ("signature", "redacted"), "reasoning block", notes),
        }
    if kind == "tool-call":
        out = _keep(block, ("type", "id", "name", "arguments"), "tool-call block", notes)
        if not isinstance(out.get("arguments", ""), str):
            out["arguments"] = json.dumps(out["arguments"], separators=(",", ":"))
            notes["tool-call arguments given as JSON value, stored as its text"] += 1
        return out
    if kind == "tool-result":
        out = _keep(block, ("type", "toolCallId", "content", "isError"), "tool-result block", notes)
        parts = _array(block.get("content"), "tool-result block content")
        out["content"] = [_result_part(b, notes) for b in parts]
        if not out.get("isError", True):
            del out["isError"]
        return out
    if kind == "image":
        notes["image block replaced by a text placeholder"] += 1
        return {"type": "text", "text": "[image]"}
    raise MappingError(f"content block type {kind!r} has no dsh counterpart")


def _result_part(block: Any, notes: Notes) -> Json:
    mapped = _block(block, notes)
    if mapped["type"] != "text":
        raise MappingError(f"tool-result content holds a {mapped['type']!r} block")
    return mapped


def _source(source: Any, notes: Notes) -> Json:
    kind = _text(_object(source, "message source").get("kind"), "message source kind")
    if kind == "agent-instructions":
        notes["source kind agent-instructions stored as plugin 'agent-instructions'"] += 1
        rest = {k: v for k, v in source.items() if k != "kind"}
        _keep(rest, (), "agent-instructions source", notes)
        return {"kind": "plugin", "plugin": "agent-instructions"}
    fields: dict[str, tuple[str, ...]] = {
        "user": ("kind",),
        "plugin": ("kind", "plugin", "compactionId", "sourceCommandId", "form"),
        "model": ("kind", "provider", "model"),
        "tool": ("kind", "callId"),
    }
    if kind not in fields:
        raise MappingError(f"message source kind {kind!r} has no dsh counterpart")
    out = _keep(source, fields[kind], f"{kind} source", notes)
    if "form" in out and not isinstance(out["form"], str):
        del out["form"]
        notes["dropped field plugin source.form (not text)"] += 1
    return out


def _message(message: Any, notes: Notes, *, role: str | None = None) -> Json:
    out = _keep(message, ("id", "role", "content", "source"), "message", notes)
    out["content"] = [_block(b, notes) for b in _array(message.get("content"), "message content")]
    out["source"] = _source(message.get("source"), notes)
    if role is not None and out.get("role") != role:
        notes[f"{out.get('role')}-role tool result stored as role {role}"] += 1
        out["role"] = role
    return out


def _usage(usage: Any, notes: Notes) -> Json | None:
    if usage is None:
        return None
    fields = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
    return _keep(usage, (*fields, "reasoningTokens"), "usage", notes)


def _range(value: Any, where: str) -> list[int]:
    if isinstance(value, dict) and set(value) == {"start", "end"}:
        return [value["start"], value["end"]]
    if isinstance(value, list) and len(value) == 2:
        return value
    raise MappingError(f"{where} must be {{start, end}}, not {value!r}")


def _error_text(error: Any) -> str | None:
    if error is None or isinstance(error, str):
        return error
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return json.dumps(error, separators=(",", ":"))


# ---- per type -------------------------------------------------------------------------------


def _user_message(data: Json, notes: Notes) -> Json:
    return _message(data, notes)


def _assistant_message(data: Json, notes: Notes) -> Json:
    fields = ("turn", "step", "message", "usage", "interrupted", "errorCode", "recoveredFromText")
    out = _text_only(
        _keep(data, fields, "assistant/message", notes), fields[-2:], "assistant/message", notes
    )
    out["message"] = _message(data.get("message"), notes)
    if data.get("usage") is not None:
        out["usage"] = _usage(data["usage"], notes)
    if not out.get("interrupted", True):
        del out["interrupted"]
    return out


def _tool_result(data: Json, notes: Notes) -> Json:
    out = _keep(data, ("turn", "step", "message", "error", "meta"), "tool/result", notes)
    out["message"] = _message(data.get("message"), notes, role="tool")
    if isinstance(data.get("error"), dict):
        out["error"] = _keep(data["error"], ("name", "code"), "tool/result error", notes)
    return out


def _turn_end(data: Json, notes: Notes) -> Json:
    given = data.get("reason")
    if isinstance(given, str):  # a bare kind, as a log may write a reason without an error
        notes["turn/end reason given as text, stored as {kind}"] += 1
        given = {"kind": given}
    reason = dict(_object(given, "turn/end reason") if given is not None else {})
    if reason.get("kind") == "blocked":
        notes["turn/end reason 'blocked' stored as 'aborted'"] += 1
        reason = {"kind": "aborted", "error": _error_text(reason.get("error")) or "blocked"}
    out = _keep(reason, ("kind", "error"), "turn/end reason", notes)
    if "error" in out:
        out["error"] = _error_text(out["error"])
    return {**_keep(data, ("turn", "reason"), "turn/end", notes), "reason": out}


def _request_header(data: Json, notes: Notes) -> Json:
    header = data.get("header")
    if not isinstance(header, dict) or not isinstance(header.get("config"), dict):
        raise MappingError("request/header needs header.config")
    config = header["config"]
    params = {k: v for k, v in config.items() if k not in ("provider", "model", "params")}
    params.update(_object(config.get("params") or {}, "request/header header.config.params"))
    new_config = {k: config[k] for k in ("provider", "model") if k in config}
    if params:
        new_config["params"] = params
    body = _keep(header, ("config", "system", "tools", "adapterDefaults"), "request/header", notes)
    if "adapterDefaults" in body:
        del body["adapterDefaults"]
        notes["dropped field request/header.adapterDefaults"] += 1
    body["config"] = new_config
    if "system" in body:
        body["system"] = _text_of(body["system"], "request/header system")
    return {**_keep(data, ("header", "reason"), "request/header", notes), "header": body}


def _compaction(fields: tuple[str, ...], name: str) -> Callable[[Json, Notes], Json]:
    def convert(data: Json, notes: Notes) -> Json:
        out = _keep(data, fields, name, notes)
        if "error" in out:
            out["error"] = _error_text(out["error"])
        if "shadowedRange" in out:
            out["shadowedRange"] = _range(out["shadowedRange"], f"{name} shadowedRange")
        for key in ("summary", "rawOutput"):
            if key in out:
                out[key] = _text_of(out[key], f"{name} {key}")
        if "usage" in out:
            out["usage"] = _usage(out["usage"], notes)
        if not out.get("llmStreamCall", True):
            del out["llmStreamCall"]
        return out

    return convert


_SUMMARY_FIELDS: tuple[str, ...] = (
    "compactionId",
    "passId",
    "kind",
    "summary",
    "shadowedRange",
    "shadowedSeqs",
    "shadowedTokenCount",
    "inputRange",
    "provider",
    "model",
    "usage",
    "rawOutput",
    "llmStreamCall",
    "degraded",
)

DATA_CONVERTERS: dict[str, Callable[[Json, Notes], Json]] = {
    "user/message": _user_message,
    "assistant/message": _assistant_message,
    "tool/result": _tool_result,
    "turn/end": _turn_end,
    "request/header": _request_header,
    "compaction/start": _compaction(
        ("compactionId", "passId", "turn", "sourceCommandId"), "compaction/start"
    ),
    "compaction/summary": _compaction(_SUMMARY_FIELDS, "compaction/summary"),
    "compaction/end": _compaction(("compactionId", "passId", "turn", "error"), "compaction/end"),
    "compaction/prune": _compaction(
        ("shadowedRange", "shadowedSeqs", "shadowedTokenCount"), "compaction/prune"
    ),
}


# ---- stream chunks --------------------------------------------------------------------------

_DELTA_TYPES = {
    "text-delta": "text",
    "reasoning-delta": "reasoning",
    "tool-call-delta": "tool-call",
}


def _chunk_event(event: Json, notes: Notes) -> Json | None:
    """The dsh event for an upstream ``assistant/chunk``, or None to keep it opaque."""
    data = event.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("chunk"), dict):
        raise MappingError("assistant/chunk needs data.chunk")
    chunk = data["chunk"]
    kind = _text(chunk.get("type"), "assistant/chunk chunk.type")
    envelope = {"type": "assistant/chunk", "seq": event.get("seq"), "time": event.get("time")}
    if kind in _DELTA_TYPES:
        delta = chunk.get("delta", chunk.get("argumentsDelta", chunk.get("text")))
        if not isinstance(delta, str):
            raise MappingError(f"{kind} chunk has no text delta")
        out = {"type": _DELTA_TYPES[kind], "delta": delta}
        out.update({k: chunk[k] for k in ("index", "id", "name") if chunk.get(k) is not None})
        return {
            **envelope,
            "data": {"turn": data.get("turn"), "step": data.get("step"), "chunk": out},
        }
    if kind == "finish":
        failure = _finish_failure(chunk)
        if failure is None:
            return None
        notes["finish chunk with a failure stored as request/error"] += 1
        return {
            "type": "request/error",
            "seq": event.get("seq"),
            "time": event.get("time"),
            "data": {"turn": data.get("turn"), "step": data.get("step"), **failure},
        }
    return None


def _finish_failure(chunk: Json) -> Json | None:
    """``{code, message, retryable}`` of a finish that reports a failure, else None."""
    reason = chunk.get("reason")
    kind = reason.get("kind") if isinstance(reason, dict) else reason
    failure = chunk.get("failure")
    if isinstance(reason, dict):
        failure = reason.get("failure", reason.get("error", failure))
    if kind != "error" and failure is None:
        return None
    if not isinstance(failure, dict):
        failure = {"message": _error_text(failure) or "model call failed"}
    return {
        "code": str(failure.get("code") or "UNKNOWN"),
        "message": str(failure.get("message") or failure.get("code") or "model call failed"),
        "retryable": bool(failure.get("retryable", False)),
    }


# ---- events ---------------------------------------------------------------------------------


def opaque(event: Json, *, renamed: bool) -> Json:
    """An upstream event kept as an opaque ignorable dsh event (nothing dropped)."""
    out = dict(event)
    if renamed:
        out["type"] = RENAMED_PREFIX + str(event["type"])
    if out.get("ignorable") is not True:
        out["ignorable"] = True
        out[FOREIGN_MARK] = True
    return out


def to_dsh(event: Json, notes: Notes) -> tuple[Json, bool]:
    """``(dsh event dict, kept_opaque)`` for one upstream event; MappingError if it cannot be."""
    kind = event.get("type")
    if not isinstance(kind, str):
        raise MappingError("event has no type")
    if kind == "assistant/chunk":
        mapped = _chunk_event(event, notes)
        if mapped is None:
            return opaque(event, renamed=True), True
        return mapped, False
    if kind not in EVENT_CLASS_BY_TYPE:
        if "surfaceOp" in event or "sourceEventSeqs" in event:
            raise MappingError(
                f"upstream event {kind!r} changes the surface but dsh has no such event"
            )
        return opaque(event, renamed=False), True
    out = _keep(event, ENVELOPE_FIELDS, "envelope", notes)
    if kind in DSH_ONLY_TYPES:
        out.pop("ignorable", None)
    converter = DATA_CONVERTERS.get(kind)
    if converter is not None:
        if not isinstance(event.get("data"), dict):
            raise MappingError(f"{kind} has no data object")
        out["data"] = converter(event["data"], notes)
    return out, False
