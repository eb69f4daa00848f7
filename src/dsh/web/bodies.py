"""The JSON bodies ``dsh web``'s routes take, read and checked (``read_body``: 413 past
``MAX_BODY``, 400 for bad JSON or a bad field, a lone surrogate named as such), and the query's
integers (``int_param``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Literal, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from dsh.agent.room import MAX_PROMPT_CHARS
from dsh.errors import error_line, json_problem
from dsh.tools.approval import REASON_LIMIT, ApprovalAnswer, DenyWithReason
from dsh.web.errors import (
    INVALID_JSON,
    PAYLOAD_TOO_LARGE,
    PROMPT_TOO_LARGE,
    ApiError,
    bad_request,
)

MAX_BODY = 1_000_000


class _Body(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class CreateBody(_Body):
    cwd: str | None = None


class LaunchBody(_Body):
    code: str


class PromptBody(_Body):
    text: str
    command: bool = False
    """``text`` is a ``/NAME ARGS`` draft: send that prompt command's text, or answer 400."""


def prompt_over_body() -> ApiError:
    """A prompt's body past ``MAX_BODY``, in the words every face refuses a long prompt with."""
    return ApiError(
        413,
        PROMPT_TOO_LARGE,
        f"the prompt is over {MAX_BODY:,} bytes; dsh takes at most {MAX_PROMPT_CHARS:,} "
        "characters: shorten it or attach the file with @path",
    )


class CompactBody(_Body):
    focus: str | None = None


class UndoBody(_Body, rename="camel"):
    dry_run: bool = False


class EmptyBody(_Body):
    pass


class AnswerBody(_Body):
    answer: Literal["once", "always", "deny"]
    reason: Annotated[str, msgspec.Meta(max_length=REASON_LIMIT)] | None = None
    """With ``deny``: what the user said to do instead, which the model reads (made one printable
    line: ``dsh.tools.approval.one_line_reason``); refused with another answer."""

    def chosen(self) -> ApprovalAnswer:
        """The answer the approver returns: ``deny`` with a reason as ``DenyWithReason``."""
        if self.reason is None:
            return self.answer
        if self.answer != "deny":
            raise bad_request(f"a reason goes only with answer deny, not {self.answer}")
        return DenyWithReason(self.reason)


class ApprovalModeBody(_Body):
    mode: str
    """Checked by ``dsh.agent.approval_command.chosen_mode``: its refusal is ``/approval``'s."""


class TitleBody(_Body):
    title: str
    """``/title TEXT``'s text: logged as one line, cut as every title is."""


class ForkBody(_Body, rename="camel"):
    before_turn: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """``/rewind N``'s turn (None: ``/fork``, the whole session)."""


class TextBody(_Body):
    text: str
    """A draft as the composer sent it (the prompt history's entry)."""


class ModelBody(_Body):
    name: str
    """``/model NAME``'s name: one word that prints (``dsh.web.models.checked_name``)."""


B = TypeVar("B", bound=_Body)


def _body_too_large() -> ApiError:
    return ApiError(413, PAYLOAD_TOO_LARGE, f"request body over {MAX_BODY} bytes")


async def read_body(
    request: Request, kind: type[B], *, too_large: Callable[[], ApiError] | None = None
) -> B:
    """The JSON body as ``kind``: 413 past ``MAX_BODY`` (``too_large``, where a route says it
    in its own words), 400 for bad JSON or a bad field."""
    over = (too_large or _body_too_large)()
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise over
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise over
        chunks.append(chunk)
    raw = b"".join(chunks).strip() or b"{}"
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as exc:
        raise bad_request(f"invalid request body: {error_line(str(exc))}") from exc
    except msgspec.DecodeError as exc:
        if _has_lone_surrogate(raw):  # msgspec calls that "Input data was truncated"
            message = "request body has a string that is not valid Unicode (a lone surrogate)"
            raise bad_request(message, INVALID_JSON) from exc
        raise bad_request(
            f"request body is not JSON: {error_line(json_problem(exc, raw))}", INVALID_JSON
        ) from exc


def _has_lone_surrogate(raw: bytes) -> bool:
    """True when ``raw`` parses as JSON (the standard library's parser accepts a
    ``\\uD800``-style escape of half a UTF-16 pair) with such a half in one of its strings."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return False
    pending = [parsed]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if any("\ud800" <= ch <= "\udfff" for ch in value):
                return True
        elif isinstance(value, dict):
            pending += [*value.keys(), *value.values()]
        elif isinstance(value, list):
            pending += value
    return False


def int_param(request: Request, name: str, *, low: int, high: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"{name} must be an integer, not {raw!r}") from None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise bad_request(f"{name} must be {bound}, not {value}")
    return value


def json_bytes(body: bytes, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type="application/json")
