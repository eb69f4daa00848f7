"""The system prompt: a fixed base, the workspace, and the project's AGENTS.md when present."""

from __future__ import annotations

from pathlib import Path

BASE_PROMPT = """\
You are dsh, a coding agent working in a software project on the user's machine.
Work in small, verifiable steps: read before you edit, run the tests after you change code,
and say plainly what you did and what is left. Use the tools to inspect and change files and to
run commands; never invent file contents or command output. Keep answers short."""

AGENTS_FILE = "AGENTS.md"
AGENTS_MAX_CHARS = 20_000


def system_prompt(workspace: Path) -> str:
    """Base prompt + workspace line + AGENTS.md (truncated if huge); the recall tools' section
    follows once they are offered (``dsh.agent.recall_offer``)."""
    parts = [BASE_PROMPT, f"Workspace: {workspace}"]
    agents = workspace / AGENTS_FILE
    if agents.is_file():
        text = agents.read_text(encoding="utf-8", errors="replace")
        if len(text) > AGENTS_MAX_CHARS:
            text = text[:AGENTS_MAX_CHARS] + "\n[AGENTS.md truncated]"
        parts.append(f"Project instructions from {AGENTS_FILE}:\n{text}")
    return "\n\n".join(parts)
