"""One error tree for dsh.

Every error dsh raises on purpose derives from :class:`DshError`; the CLI prints its message as
one line on stderr. ``retryable`` tells callers whether trying the same thing again may succeed.

    DshError
    ├── ConfigError                 bad config file, key or value (names the key)
    │   ├── MissingApiKeyError      a provider needs a key; names the variable to set
    │   └── WindowTooSmall          the system prompt and tools leave a conversation no room
    ├── EventError                  an event breaks a rule of the log (names the seq)
    │   ├── EventValidationError    rejected at append, or found in a stored log
    │   └── SurfaceError            replace endpoints / sources / pairing on the surface
    ├── StoreError                  durable storage problems
    │   ├── SessionNotFoundError    no session with that id
    │   ├── SessionLockedError      another process holds the write lock (names its pid)
    │   ├── LogCorruptError         a stored log cannot be read (names line or seq)
    │   │   ├── UnknownEventTypeError   a required event type this version does not know
    │   │   └── HeaderCorruptError      its header: nothing `dsh sessions repair` can keep
    │   ├── ReadOnlySessionError    append on a session opened read-only
    │   └── StorageWriteError       the OS refused a write; none of its events was committed
    ├── ProviderError               a model call failed; ``code`` says how, ``retryable`` whether
    │                               trying again may help (mapped in ``dsh.llm.errors`` only)
    ├── ToolError                   a tool refused or failed (becomes an error tool result)
    └── UsageError                  a command was called with arguments it cannot use
        └── PromptTooLarge          a prompt no request could carry (``dsh.agent.room``)
"""

from __future__ import annotations

import re

SHOWN_AS_ERROR = "dsh_shown_as_error"
"""Set on a log record (``log.error(…, extra={SHOWN_AS_ERROR: True})``) of a failure the face
that logs it already shows as an error of its own (the web page's error toast, the terminal
UI's error note). The faces' warnings displays list such a record without a toast of theirs,
so the failure shows once; the stderr printer prints it as any other."""


def shown_as_error(record: object) -> bool:
    """Whether ``record`` (a log record) is of a failure its face already shows as an error."""
    return getattr(record, SHOWN_AS_ERROR, False) is True


ERROR_LINE_CHARS = 300
"""How long ``error_line`` lets an error's text get."""
WARNING_LINE_CHARS = 2 * ERROR_LINE_CHARS
"""How long a warning's text gets, on stderr (``dsh.cli.warning_lines``), in the terminal UI's
toasts and ``/warnings`` (``dsh.tui.app_warnings``) and in the web page's (as ``dsh web`` keeps
and sends it, ``dsh.web.warning_feed``): room for an error's text (itself at most
``ERROR_LINE_CHARS``) and dsh's words around it (``turn 3 stopped: …``, a file's path)."""


def error_line(error: BaseException | str, limit: int = ERROR_LINE_CHARS) -> str:
    """``error`` as one line for people, the one way every face shows an error's text (a toast,
    a transcript's note, a warnings list, a line on stderr): an exception as ``Type: message``,
    a text (an error's message as a log stored it) as it is; runs of white space as one space,
    any other character that does not print (a terminal escape, a bidi override) as its Python
    escape, cut to at most ``limit`` characters (ending in "…" when cut). What was logged keeps
    the whole text; the web page's projection, which cannot call this, mirrors it
    (``errorLine`` in ``dsh/web/static/projection.js``, held equal by a browser test)."""
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else error
    shown = printable_line(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def printable_line(text: str) -> str:
    """``text`` as one line a terminal shows as it is, not cut: runs of white space (a newline
    among them) as one space, any other character that does not print (a terminal escape, a
    bell, a bidi override) as its Python escape (``\\x1b``). What ``error_line`` shows before
    it cuts; a session's title (``dsh.transcript.titles.trim_title``) is shown the same way."""
    flat = " ".join(text.split())
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in flat)


_BYTE_OFFSET = re.compile(r" \(byte (\d+)\)$")


def json_problem(error: Exception, data: bytes) -> str:
    """What is wrong with JSON ``data`` as msgspec's decode ``error`` says it, its place as a
    column (from 1, in characters), with its line when ``data`` has several, instead of
    msgspec's ``(byte 0)``, which reads like a NUL byte: ``JSON is malformed: invalid character
    at column 1`` (a caller that read ``data`` as one line of a file names that line). Any
    other message is kept as it is."""
    message = str(error)
    found = _BYTE_OFFSET.search(message)
    if found is None:
        return message
    before = data[: int(found.group(1))]
    column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
    lines = before.count(b"\n") + 1
    line = f"line {lines}, " if b"\n" in data else ""
    return f"{message[: found.start()]} at {line}column {column}"


class DshError(Exception):
    """Base of every error dsh raises on purpose."""

    retryable: bool = False


class ConfigError(DshError):
    """A configuration file, key or value is invalid."""


class MissingApiKeyError(ConfigError):
    """A provider needs an API key and none was configured; ``variable`` is the one to set."""

    def __init__(
        self,
        variable: str,
        *,
        provider: str | None = None,
        keyed: tuple[tuple[str, str], ...] = (),
    ) -> None:
        who = f" for {provider}" if provider else ""
        other = " or ".join(f"--provider {name} ({key})" for name, key in keyed)
        how = f", or choose a provider whose key is set: {other}"
        if not keyed:
            how = " (or run `dsh demo`, which needs none)"
        super().__init__(f"no API key{who}: set {variable}{how}")
        self.variable = variable
        self.provider = provider
        self.keyed = keyed
        """The other providers whose key is set, each with its variable (``dsh.agent.runtime``):
        to choose with ``--provider``."""


class EventError(DshError):
    """An event breaks a rule of the log."""

    def __init__(self, message: str, *, seq: int | None = None) -> None:
        super().__init__(message)
        self.seq = seq


class EventValidationError(EventError):
    """An event is malformed or not allowed where it is appended or stored."""


class SurfaceError(EventError):
    """A surface operation is invalid (replace endpoints, sources, tool pairing)."""


class StoreError(DshError):
    """Durable storage failed or refused."""


class SessionNotFoundError(StoreError):
    """No session has the given id."""


class SessionLockedError(StoreError):
    """Another process is writing the session."""

    def __init__(self, message: str, *, holder_pid: int | None) -> None:
        super().__init__(message)
        self.holder_pid = holder_pid


class LogCorruptError(StoreError):
    """A stored log cannot be loaded; the message names the line or seq."""

    def __init__(self, message: str, *, line: int | None = None, seq: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.seq = seq


class HeaderCorruptError(LogCorruptError):
    """A stored session's header (a JSONL log's first line, a SQLite row's header) is missing
    or cannot be read: without it no event can be kept, so ``dsh sessions repair`` cannot
    help and no message suggests it."""


class UnknownEventTypeError(LogCorruptError):
    """A stored event has a type this version does not know and is not marked ignorable."""

    def __init__(
        self,
        event_type: str,
        *,
        seq: int | None,
        line: int | None = None,
        context: str | None = None,
    ) -> None:
        where = f"seq {seq}" if seq is not None else f"line {line}"
        prefix = f"{context}: " if context else ""
        super().__init__(
            f"{prefix}unknown event type {event_type!r} at {where} (not marked ignorable); "
            "this session was written by a newer or foreign harness",
            line=line,
            seq=seq,
        )
        self.event_type = event_type


class ReadOnlySessionError(StoreError):
    """The session was opened read-only and cannot be appended to."""


class StorageWriteError(StoreError):
    """The operating system refused a write; the event was not committed."""

    retryable = True


class ProviderError(DshError):
    """A model call failed. ``code`` is one of ``dsh.llm.errors.ErrorCode``."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.detail = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        """Seconds the server asked the client to wait before trying again (``Retry-After``)."""


class ToolError(DshError):
    """A tool refused its arguments or failed; the loop turns it into an error tool result."""

    def __init__(self, message: str, *, code: str = "TOOL_ERROR") -> None:
        super().__init__(message)
        self.code = code


class UsageError(DshError):
    """A command was called with arguments it cannot use."""


class AmbiguousSessionError(UsageError):
    """A session id prefix matches more than one session (the CLI exits as for an unknown id)."""


class PromptTooLarge(UsageError):
    """A prompt no request could carry: longer than every face takes, or more than the context
    window leaves beside the system prompt, tools and reply (``dsh.agent.room``). Refused
    before anything is logged; the face keeps the prompt for people to shorten."""


class WindowTooSmall(ConfigError):
    """A context window in which the system prompt and tools as sent leave a conversation no
    room under the compaction threshold (``dsh.agent.room.window_problem``): refused at start."""
