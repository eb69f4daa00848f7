"""Fixtures shared with the agent tests."""

from tests.agent.conftest import harness  # noqa: F401
