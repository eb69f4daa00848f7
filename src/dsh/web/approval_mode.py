"""``/approval`` in ``dsh web``: each session's approval mode, shown and changed from its page.

A session runs with the mode ``dsh web``'s flags and its own workspace's config give every
agent made here (``--yes``: ``auto``; else ``tools.approval`` as ``dsh run`` there reads it:
``dsh.web.workspace_settings``), and ``--allow``'s kinds run unasked whatever the mode.
``/approval MODE`` in a session's composer changes its mode for the rest of this server's run:
its running turn's next tool calls, its later turns, and the same session closed and opened
here again. Not the other sessions (each page changes its own), not the config file,
not the session's log: a server started again decides by the flags and the config again, as
the terminal UI's next run does. The words are the terminal UI's
(``dsh.agent.approval_command``)."""

from __future__ import annotations

from typing import Any

from dsh.agent.approval_command import allowed_flags, changed_note, chosen_mode, shown_note
from dsh.errors import DshError
from dsh.tools.approval import ApprovalMode, ApprovalPolicy
from dsh.web.errors import from_dsh_error


class ApprovalModes:
    """The modes chosen with ``/approval``, by session id, for the rest of this server's run."""

    def __init__(self) -> None:
        self.chosen: dict[str, ApprovalMode] = {}

    def public(self, session_id: str, policy: ApprovalPolicy) -> dict[str, Any]:
        """``{mode, allow}``: the mode the session's next tool call is decided by (the chosen
        one, else ``policy``'s: the flags' and the config's) and ``--allow``'s kinds, as the
        flag spells them."""
        mode = self.chosen.get(session_id, policy.mode)
        return {"mode": mode, "allow": allowed_flags(policy.allow)}

    def shown(self, session_id: str, policy: ApprovalPolicy) -> dict[str, Any]:
        """``public`` and what ``/approval`` without a mode says of it (``note``)."""
        now = self.public(session_id, policy)
        return {**now, "note": shown_note(now["mode"], policy.allow)}

    def choose(self, session_id: str, arg: str, policy: ApprovalPolicy) -> dict[str, Any]:
        """``/approval ARG``: the mode ARG names, kept for the session; ``public`` and what the
        command says (``note``). Raises ``ApiError`` (400, the command's one-line refusal) for
        anything but ``ask``, ``auto`` or ``read-only``."""
        try:
            mode = chosen_mode(arg.strip())
        except DshError as exc:
            raise from_dsh_error(exc) from exc
        self.chosen[session_id] = mode
        return {**self.public(session_id, policy), "note": changed_note(mode, policy.allow)}
