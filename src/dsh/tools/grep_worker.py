"""The process ``grep`` runs in: ``python -P -m dsh.tools.grep_worker``.

Python's ``re`` holds the GIL for a whole match, so a pattern that backtracks catastrophically
(``(a|a)*b`` on a line of forty ``a``) run in a thread freezes the entire harness — the event
loop, the interface, even Ctrl-C — for as long as the match takes, which may be years. In a
process of its own it can be killed: :class:`~dsh.tools.search.GrepTool` kills it at a deadline
and when its call is cancelled.

The request (JSON on stdin): ``pattern``, ``path``, ``workspace`` and the secret ``values`` a
long line must not be cut inside. The answer (JSON on stdout): ``{"text": …}``, or
``{"error": …, "code": …}`` for a ``ToolError``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from dsh.errors import ToolError
from dsh.tools.args import INVALID_ARGUMENT
from dsh.tools.search import grep_text
from dsh.tools.secrets import SecretPolicy


def answer(request: dict[str, object]) -> dict[str, str]:
    """The worker's answer to one decoded request."""
    pattern, path, workspace = request["pattern"], request["path"], request["workspace"]
    assert isinstance(pattern, str) and isinstance(path, str) and isinstance(workspace, str)
    values = request.get("values") or []
    assert isinstance(values, list)
    secrets = SecretPolicy(values=tuple((str(n), str(v)) for n, v in values))
    try:
        try:
            regex = re.compile(pattern)
        except (re.error, OverflowError, RecursionError) as exc:
            raise ToolError(
                f"invalid regular expression {pattern!r}: {exc}", code=INVALID_ARGUMENT
            ) from exc
        return {"text": grep_text(regex, path, Path(workspace), secrets)}
    except ToolError as exc:
        return {"error": str(exc), "code": exc.code or "TOOL_FAILED"}
    except OSError as exc:
        return {"error": f"grep failed: {exc.strerror or exc}", "code": "IO_ERROR"}


def main() -> None:
    """Read one request from stdin, write its answer to stdout."""
    request = json.loads(sys.stdin.buffer.read())
    sys.stdout.write(json.dumps(answer(request)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
