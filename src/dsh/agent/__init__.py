"""The loop: turns, steps, pre-step hooks, tool execution, cancellation, request building."""

from dsh.agent.loop import Agent, AgentConfig, OverflowHandler, PreStepHook, TurnResult
from dsh.agent.prompt import system_prompt
from dsh.agent.request import rebuild_requests, request_from_state

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
