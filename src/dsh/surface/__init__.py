"""The model's projection of the log: fold, live session, derived messages, pairing, measure."""

from dsh.events import model_message, surface_message
from dsh.surface.calibration import Calibration
from dsh.surface.checkpoints import (
    checkpoint_kind,
    checkpoint_summary_event,
    checkpoint_summary_text,
    summary_kind,
    summary_of_node,
)
from dsh.surface.cuts import (
    attached_to_previous,
    clean_cut_after,
    is_attachment,
    is_prompt,
    retain_boundary,
)
from dsh.surface.projection import Replacement, SurfaceProjection, fold_surface
from dsh.surface.session import (
    Draft,
    Measurement,
    OpenRepair,
    Session,
    repair_on_open,
)
from dsh.surface.tokens import message_tokens, system_tokens, text_tokens, tools_tokens

__all__ = [
    "Calibration",
    "Draft",
    "Measurement",
    "OpenRepair",
    "Replacement",
    "Session",
    "SurfaceProjection",
    "attached_to_previous",
    "checkpoint_kind",
    "checkpoint_summary_event",
    "checkpoint_summary_text",
    "clean_cut_after",
    "fold_surface",
    "is_attachment",
    "is_prompt",
    "message_tokens",
    "model_message",
    "repair_on_open",
    "retain_boundary",
    "summary_kind",
    "summary_of_node",
    "surface_message",
    "system_tokens",
    "text_tokens",
    "tools_tokens",
]
