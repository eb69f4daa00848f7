"""The message model carried inside events (docs/events.md, Message and the blocks after it).

A message is ``{id, role, content: [block…], source}``. Blocks and sources are tagged unions
(``type`` and ``kind``). Everything is frozen; sequences are tuples so nothing can be mutated
after it is appended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, Literal, TypeVar

import msgspec

if TYPE_CHECKING:
    from dsh.events.types import (
        EventBase,
        UserMessageEvent,  # noqa: F401 - named by Message's base
    )


class Struct(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    omit_defaults=True,
    rename="camel",
    gc=False,
):
    """Base of every struct stored in a log: frozen, strict, camelCase on disk. ``gc=False``:
    the cyclic collector never tracks them (frozen values decoded from JSON cannot form a
    cycle), so a full collection does not walk a loaded log; reference counting frees them."""


E = TypeVar("E", bound="EventBase")


class Payload(Struct, Generic[E], frozen=True):
    """The ``data`` of exactly one event class ``E``: every payload names the event it becomes
    (``class TurnStart(Payload["TurnStartEvent"])``), so ``Session.append(payload)`` is typed
    as returning that class. Type-level only: the parameter is never resolved at run time and
    changes nothing on disk."""


# ---- content blocks -------------------------------------------------------------------------


class TextBlock(Struct, tag="text", tag_field="type", frozen=True):
    text: str


class ReasoningBlock(Struct, tag="reasoning", tag_field="type", frozen=True):
    text: str
    signature: str | None = None
    """Anthropic: the thinking block's signature, sent back with it unchanged."""
    redacted: str | None = None
    """Anthropic: the opaque ``data`` of a ``redacted_thinking`` block (``text`` is empty)."""


class ToolCallBlock(Struct, tag="tool-call", tag_field="type", frozen=True):
    """A tool call as the model made it: ``arguments`` is the raw JSON text it produced, kept
    verbatim even when malformed (the tool then answers with an ``INVALID_ARGUMENT`` error)."""

    id: str
    name: str
    arguments: str
    """The raw JSON text the model produced (it may be malformed)."""


class ToolResultBlock(Struct, tag="tool-result", tag_field="type", frozen=True):
    tool_call_id: str
    content: tuple[TextBlock, ...]
    is_error: bool = False


Block = TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock


# ---- sources --------------------------------------------------------------------------------


class UserSource(Struct, tag="user", tag_field="kind", frozen=True):
    """A prompt typed by a person."""


ATTACH_PLUGIN = "attach"
"""``PluginSource.plugin`` of the notes a prompt's ``@path`` mentions attach after it."""

RECALL_PLUGIN = "recall"
"""``PluginSource.plugin`` of the note of compacted messages matching a prompt's words that
follows it (``recall.attach_matches``; ``dsh.agent.recall_matches``)."""

PROMPT_NOTE_PLUGINS = frozenset({ATTACH_PLUGIN, RECALL_PLUGIN})
"""The plugins whose notes belong to the prompt before them (no cut parts them)."""


class PluginSource(Struct, tag="plugin", tag_field="kind", frozen=True):
    """Context injected by a plugin; ``plugin == "compact"`` marks a compaction checkpoint."""

    plugin: str
    compaction_id: str | None = None
    source_command_id: str | None = None
    form: str | None = None


class ModelSource(Struct, tag="model", tag_field="kind", frozen=True):
    provider: str
    model: str


class ToolSource(Struct, tag="tool", tag_field="kind", frozen=True):
    call_id: str


Source = UserSource | PluginSource | ModelSource | ToolSource

COMPACT_PLUGIN = "compact"
"""The plugin name that marks a compaction checkpoint (see ``is_compact_checkpoint_source``)."""


Role = Literal["system", "user", "assistant", "tool"]


class Message(Payload["UserMessageEvent"], frozen=True):
    id: str
    role: Role
    content: tuple[Block, ...]
    source: Source

    def text(self) -> str:
        """The concatenated text blocks (no reasoning, no tool calls)."""
        return "".join([b.text for b in self.content if type(b) is TextBlock])

    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolCallBlock))


class Usage(Struct, frozen=True):
    """Provider token counts. ``input_tokens`` excludes cache reads (the counts are disjoint)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    def request_tokens(self) -> int:
        """The size of the request the provider saw: input + cache read + cache write."""
        return self.input_tokens + (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)


def is_compact_checkpoint_source(source: Source) -> bool:
    """True iff the source marks a compaction checkpoint: the ONE test every consumer uses."""
    return isinstance(source, PluginSource) and source.plugin == COMPACT_PLUGIN
