"""The settings wiring the terminal UI's sessions run with: the controller's current route,
the agent from its ``agent_factory``, the session's approval policy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.agent.loop import Agent, StreamListener
from dsh.agent.runtime import Route
from dsh.agent.session_runner import CompactionEngine, SettingsWiring
from dsh.agent.wiring import build_parts
from dsh.surface import Session
from dsh.tools.approval import Approver
from dsh.tui.factories import settings_agent_factory

if TYPE_CHECKING:
    from dsh.tui.controller import Controller


class FaceWiring(SettingsWiring):
    """The settings wiring every face uses, on the controller's current route, with the agent
    from ``agent_factory`` and the session's approval policy."""

    def __init__(self, controller: Controller) -> None:
        super().__init__(controller.options.settings, self._current_route, recorded_wins=False)
        self.controller = controller

    def _current_route(self) -> Route:
        route = self.controller.route
        assert route is not None, "start() resolves the route first"
        return route

    def make_agent(
        self, session: Session, *, on_stream: StreamListener, approver: Approver
    ) -> Agent:
        controller = self.controller
        factory = controller.options.agent_factory or settings_agent_factory(
            controller.settings, controller.options.workspace
        )
        return factory(session, self.route(), controller.policy, on_stream)

    def make_engine(self, session: Session) -> CompactionEngine | None:
        """The engine on the session's own settings (its recorded budgets and summariser)."""
        return build_parts(self.controller.settings, self.route(), session).engine

    def record_settings_of(self, session: Session) -> None:
        self.controller._record(session, self.route())
