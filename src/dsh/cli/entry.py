"""The ``dsh`` console script's entry point: dsh's process is made non-dumpable before
anything else is imported, then the command line runs (:mod:`dsh.cli.main`).

Until then any process of the user's can read dsh's starting environment, API keys included,
in ``/proc/<dsh pid>/environ`` (``dsh.tools.process_guard``). Parsing the command line imports
click, and running a command its group with the libraries behind it (the terminal UI's take
about a second): made non-dumpable only once that was done, dsh left its keys readable all that
while. Here it is done first, so what is left is the interpreter's own start. It costs the
lookup of libc's ``prctl`` (``ctypes``), about 2 ms of ``dsh --help``
(``benchmarks/cli_startup.py``).
"""

from __future__ import annotations

from dsh.tools.process_guard import protect_process


def main() -> None:
    """The ``dsh`` console script."""
    protect_process()
    from dsh.cli.main import main as run_command_line

    run_command_line()
