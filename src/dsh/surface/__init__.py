"""The model's projection of the log: fold, live session, derived messages, pairing, measure."""

from dsh.events import surface_message
from dsh.surface.projection import Replacement, SurfaceProjection, fold_surface
from dsh.surface.session import (
    Draft,
    Measurement,
    Session,
)
from dsh.surface.tokens import message_tokens, system_tokens, text_tokens, tools_tokens

__all__ = [
    "Draft",
    "Measurement",
    "Replacement",
    "Session",
    "SurfaceProjection",
    "fold_surface",
    "message_tokens",
    "surface_message",
    "system_tokens",
    "text_tokens",
    "tools_tokens",
]
