"""The payloads of the session-level events: the workspace a lifecycle runs in, the settings
that define the session, and its title."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from dsh.events.messages import Payload, Struct

if TYPE_CHECKING:  # the event classes each payload names in its base (type-level only)
    from dsh.events.types import (  # noqa: F401
        SessionSettingsEvent,
        SessionTitleEvent,
        SessionWorkspaceEvent,
    )


class SessionWorkspace(Payload["SessionWorkspaceEvent"], frozen=True):
    """Tools of this lifecycle run in ``cwd`` instead of the header's workspace (``--cwd``)."""

    cwd: str
    recorded: str
    """The workspace the session header records."""


class RecordedCompaction(Struct, frozen=True):
    """The compaction backend, budgets and summariser a session runs with."""

    backend: Literal["recallable", "basic", "off"]
    threshold_ratio: float
    low_watermark_ratio: float
    retain_ratio: float
    chunk_tokens: int
    stub_tokens: int
    state_max_tokens: int
    stub_region_ratio: float
    min_stale_ratio: float
    summarizer: str
    retain_tokens: int | None = None
    summarizer_provider: str | None = None
    summarizer_base_url: str | None = None
    summarizer_context_window: int | None = None


NO_ROUTE = ""
"""``SessionSettings.provider`` (and ``model``) of a record without a route: ``dsh sessions
import`` dropped the one the log named (``dsh.interop.foreign_route``)."""


class SessionSettings(Payload["SessionSettingsEvent"], frozen=True):
    """The settings that define the session (latest wins; never a key): its route, window,
    compaction and workspace. Logged when first chosen and whenever a flag changes one;
    ``changed`` names the keys that changed (empty on the first record). A record whose
    ``provider`` is empty (``NO_ROUTE``) names no route: an import dropped the route, window
    and summariser the log recorded, and the session runs on the configured ones."""

    provider: str
    model: str
    compaction: RecordedCompaction
    workspace: str
    base_url: str | None = None
    context_window: int | None = None
    changed: tuple[str, ...] = ()
    window_asked: bool | None = None
    """True: ``context_window`` is what the route's server was asked for (its answer, or the
    default assumed when it gave none), asked again when the session reopens; False: the
    settings gave it (``provider.context_window``, ``--context-window``, the provider's known
    window), kept; None: recorded before dsh said which (``dsh.agent.asked_window``)."""
    window_reported: bool | None = None
    """Of a window asked (``window_asked``): True, the server reported it; False, it gave none
    (silent, or not reached) and ``context_window`` is the default assumed; None: not asked,
    or recorded before dsh said which."""


class SessionTitle(Payload["SessionTitleEvent"], frozen=True):
    """The session's title, set by a person (``/title``); without one, the first prompt is."""

    title: str
