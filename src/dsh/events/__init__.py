"""The event vocabulary: frozen, tagged, lossless-JSON structs, their codec and predicates."""

from dsh.events.by_type import EventsByType
from dsh.events.codec import (
    check_contiguous,
    check_events,
    check_json_value,
    decode_event_chunks,
    decode_event_line,
    decode_event_lines,
    decode_events,
    decode_events_unchecked,
    encode_event,
    encode_json,
    event_type_of,
    validate_event_shape,
)
from dsh.events.compaction_payloads import unfinished_pass_note
from dsh.events.messages import (
    ATTACH_PLUGIN,
    COMPACT_PLUGIN,
    Block,
    Message,
    ModelSource,
    PluginSource,
    ReasoningBlock,
    Source,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSource,
    Usage,
    UserSource,
    is_compact_checkpoint_source,
)
from dsh.events.pairing import OpenCalls
from dsh.events.predicates import (
    is_append_surface_event,
    is_checkpoint_event,
    is_replacement_surface_event,
    is_surface_event,
    surface_message,
)
from dsh.events.types import *  # noqa: F403 - the vocabulary is the module's purpose
from dsh.events.types import __all__ as _types_all

__all__ = [
    "COMPACT_PLUGIN",
    "Block",
    "EventsByType",
    "Message",
    "ModelSource",
    "OpenCalls",
    "ATTACH_PLUGIN",
    "PluginSource",
    "ReasoningBlock",
    "Source",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ToolSource",
    "Usage",
    "UserSource",
    "check_contiguous",
    "check_events",
    "check_json_value",
    "decode_event_chunks",
    "decode_event_line",
    "decode_event_lines",
    "decode_events",
    "decode_events_unchecked",
    "encode_event",
    "encode_json",
    "event_type_of",
    "is_append_surface_event",
    "is_checkpoint_event",
    "is_compact_checkpoint_source",
    "is_replacement_surface_event",
    "is_surface_event",
    "surface_message",
    "unfinished_pass_note",
    "validate_event_shape",
    *_types_all,
]
