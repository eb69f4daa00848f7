"""The system prompt: a fixed base, the workspace, the project's AGENTS.md when present, and the
environment (``dsh.agent.environment``) last, so the part a date change touches is the end."""

from __future__ import annotations

from pathlib import Path

from dsh.agent.environment import Environment, environment_section

BASE_PROMPT = """\
You are dsh, a coding agent working in a software project on the user's machine.
Work in small, verifiable steps: read before you edit, run the tests after you change code,
and say plainly what you did and what is left. Use the tools to inspect and change files and to
run commands; never invent file contents or command output. Keep answers short."""

AGENTS_FILE = "AGENTS.md"
AGENTS_MAX_CHARS = 20_000


def system_prompt(workspace: Path, environment: Environment) -> str:
    """Base prompt + workspace line + AGENTS.md (truncated if huge) + the environment section:
    the same text for the same workspace, AGENTS.md and ``environment``. The recall tools'
    section follows once they are offered (``dsh.agent.recall_offer``)."""
    parts = [BASE_PROMPT, f"Workspace: {workspace}"]
    agents = workspace / AGENTS_FILE
    if agents.is_file():
        text = agents.read_text(encoding="utf-8", errors="replace")
        if len(text) > AGENTS_MAX_CHARS:
            text = text[:AGENTS_MAX_CHARS] + "\n[AGENTS.md truncated]"
        parts.append(f"Project instructions from {AGENTS_FILE}:\n{text}")
    parts.append(environment_section(environment))
    return "\n\n".join(parts)
