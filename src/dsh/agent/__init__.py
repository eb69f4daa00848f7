"""The loop: turns, steps, pre-step hooks, tool execution, cancellation, request building.

Importing it registers what a session opened for writing needs repaired that only the agent
knows (``dsh.surface.repair_on_open``): the clean-up after an undo a killed process left half
done (``dsh.agent.undo_recovery.recover_at_open``). Every face imports it before it opens one.
"""

from dsh.agent.loop import Agent, AgentConfig, OverflowHandler, PreStepHook, TurnResult
from dsh.agent.prompt import system_prompt
from dsh.agent.request import rebuild_requests, request_from_state
from dsh.agent.undo_recovery import recover_at_open
from dsh.surface import repair_on_open

repair_on_open(recover_at_open)

__all__ = [
    "Agent",
    "AgentConfig",
    "OverflowHandler",
    "PreStepHook",
    "TurnResult",
    "rebuild_requests",
    "request_from_state",
    "system_prompt",
]
