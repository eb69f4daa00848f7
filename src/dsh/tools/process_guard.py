"""dsh's own process kept from the commands it runs (docs/usage.md, "Approval and what
commands can reach").

A command runs as you, so without this it could read dsh's initial environment, API keys
included, from ``/proc/<dsh pid>/environ`` (and its memory from ``/proc/<pid>/mem``): the
scrubbed environment would be bypassed, and output masking only knows the literal value, not
``base64`` of it. :func:`protect_process` makes dsh *non-dumpable* (``prctl(PR_SET_DUMPABLE,
0)``): its ``/proc/<pid>`` files then belong to root, and a process of yours that is not
privileged can neither read them nor attach to dsh. Children are not affected: the flag resets
when a child executes a program (bash, an MCP server), so ``/proc/self`` works as usual there.

Side effects: dsh leaves no core dump, and debuggers or profilers of the same user (``gdb -p``,
``py-spy``, ``strace -p``, ``lsof -p``) need root; a terminal or tmux that reads the foreground
process's ``/proc/<pid>/cwd`` falls back to its shell's. Root (or CAP_SYS_PTRACE) can still read
everything, and on other systems than Linux this does nothing.
"""

from __future__ import annotations

from dsh.tools.subreaper import PR_SET_DUMPABLE, prctl


def protect_process() -> bool:
    """Make this process non-dumpable (Linux; once, before any tool or MCP server runs).
    True when it now is; False where that is not available."""
    return prctl(PR_SET_DUMPABLE, 0)
