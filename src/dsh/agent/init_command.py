"""``/init``: dsh's own prompt command, asking the model to write or refresh the workspace's
``AGENTS.md`` (the project instructions every later session's system prompt states,
``dsh.agent.prompt``). It is a prompt like any other (``dsh.agent.prompt_commands`` lists it
after yours and the project's, which may replace it with an ``init.md``): the model inspects the
project with its tools, and its write goes through the approval policy as any write does."""

from __future__ import annotations

INIT_NAME = "init"
INIT_DESCRIPTION = "Inspect the project and write or refresh its AGENTS.md"
INIT_TEMPLATE = """\
Inspect this project and write its AGENTS.md, the standing instructions a coding agent reads \
at the start of every session here, at the top of the workspace.

First look, do not guess: list the top-level files and directories; read the README, the \
build and package files (pyproject.toml, package.json, Cargo.toml, go.mod, Makefile, CI \
workflows and the like) and a few representative source and test files. If an AGENTS.md \
(or a CLAUDE.md) is there already, read it: keep what is still true, correct what is not, and \
keep its author's own rules.

Then write AGENTS.md, short and specific to this project, with these sections:
- Build and run: the exact commands to install dependencies, build and run it.
- Tests: the exact commands to run all the tests and a single test, and the linters or type \
checkers and formatters it uses.
- Layout: the main directories and what lives in each, and where to start reading.
- Conventions: code style, naming, error handling and commit messages, as the code and its \
configuration actually show them.
State only what you verified in the files; where something cannot be known from them, leave it \
out rather than invent it. Keep it under about 150 lines. Write the file with your file tools, \
then say in a few lines what you wrote or changed."""
"""What ``/init`` sends; what follows ``/init`` on the line is added after a blank line."""
