"""The terminal UI (``dsh``, ``dsh --resume [ID]``): a Textual app over one session's log."""

from dsh.tui.app import DshApp
from dsh.tui.controller import AgentFactory, Controller, RouteFactory, TuiOptions

__all__ = ["AgentFactory", "Controller", "DshApp", "RouteFactory", "TuiOptions"]
