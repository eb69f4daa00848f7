"""The terminal UI (``dsh``, ``dsh --resume [ID]``): a Textual app over one session's log."""

from dsh.tui.app import DshApp
from dsh.tui.controller import Controller, TuiOptions
from dsh.tui.factories import AgentFactory, RouteFactory

__all__ = ["AgentFactory", "Controller", "DshApp", "RouteFactory", "TuiOptions"]
