"""Keeping secrets out of tools (docs/usage.md, "Approval and what commands can reach";
``tools.scrub_env`` in docs/config.md).

Shell commands run with a scrubbed environment: no provider key, no variable of dsh's own that
can carry one (``DSH_PROVIDER_HEADERS``, ``DSH_MCP_SERVERS``: a gateway token, an MCP server's
``env``), and no variable whose name matches ``SECRET_NAME_PATTERNS`` (``*_KEY``, ``*_TOKEN``,
``*_SECRET*``, ``*PASSWORD*``, ``*PASSWD*``, ``*CREDENTIAL*``, ``*_PAT``, ``*_DSN``, ``*_AUTH``,
``*_AUTH_CONFIG``, ``*AUTHTOKEN*``, ``*APIKEY*``, ``*_PASS``, ``*JWT*``, ``*_WEBHOOK*``,
``*DATABASE_URL``; case-insensitive, and the word may begin the name: ``API_KEY``, ``TOKEN``,
``SECRET_KEY``; and ``MYSQL_PWD``), any variable whose value is a URL with a password
(``redis://:pass@host``), plus the names or glob patterns configured in ``tools.scrub_env`` and the
variables the config names as holding a key (``provider.api_key_env``; the policy is built in
``dsh.agent.mcp_servers.tool_secrets``). And since a key can still reach a tool
another way (``cat .env``, a shell profile, a file the model reads), the value of every such
variable — and a configured ``provider.api_key``, ``provider.headers`` value or secret-named
MCP server ``env`` value — is masked in every tool output before it is logged. Values shorter
than :data:`MIN_MASK_CHARS` are not masked (``1`` or ``yes`` would blank ordinary text); they
are still scrubbed from the environment.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

PROVIDER_KEY_VARS = ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
SECRET_CONFIG_VARS = ("DSH_PROVIDER_HEADERS", "DSH_MCP_SERVERS")
"""dsh's own variables whose value can hold a secret (a header's token, a server's ``env``):
only the values inside were masked, so ``echo $DSH_PROVIDER_HEADERS | base64`` carried the
token into the log."""
SECRET_NAME_PATTERNS = (
    "*_KEY",
    "*_TOKEN",
    "*_SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*_PAT",
    "*_DSN",
    "*_AUTH",
    "*_AUTH_CONFIG",
    "*AUTHTOKEN*",
    "*APIKEY*",
    "*_PASS",
    "*JWT*",
    "*_WEBHOOK*",
    "*DATABASE_URL",
)
"""Names of secrets by convention (``STRIPE_KEY``, ``GH_PAT``, ``SENTRY_DSN``, ``NPM_AUTH``,
``DOCKER_AUTH_CONFIG``, ``NPM_CONFIG__AUTHTOKEN``, ``OPENAI_APIKEY``, ``SMTP_PASS``,
``CI_JOB_JWT``, ``SLACK_WEBHOOK_URL``, ``DATABASE_URL`` with its password); ``*_KEY`` covers
``*_API_KEY``."""
SECRET_NAMES = ("MYSQL_PWD", "PGPASSFILE")
"""Whole names: a ``*_PWD`` pattern would take the shell's own ``PWD`` (the working directory,
whose value would then be masked in every output)."""
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:[^/?#@\s]+@")
"""A value such as ``redis://:pass@host`` or ``amqp://user:pass@host``: a secret, whatever the
variable is called (``REDIS_URL``, ``BROKER``)."""
MIN_MASK_CHARS = 8
MASK = "[masked {name}]"


def is_secret_variable(name: str, value: str, extra_patterns: Iterable[str] = ()) -> bool:
    """True if the variable must not reach a command: its name is a secret's
    (:func:`is_secret_name`) or its value is a URL carrying a password."""
    return is_secret_name(name, extra_patterns) or _URL_WITH_PASSWORD.match(value) is not None


def is_secret_name(name: str, extra_patterns: Iterable[str] = ()) -> bool:
    """True if the variable ``name`` must not reach a command (case-insensitive globs)."""
    upper = name.upper()
    if upper in PROVIDER_KEY_VARS or upper in SECRET_CONFIG_VARS or upper in SECRET_NAMES:
        return True
    # The built-in words may also begin the name: API_KEY, TOKEN, SECRET_KEY.
    if any(fnmatch.fnmatchcase(f"_{upper}", pattern) for pattern in SECRET_NAME_PATTERNS):
        return True
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in extra_patterns)


@dataclass(frozen=True, slots=True)
class SecretPolicy:
    """What to scrub from command environments and what to mask in tool output."""

    extra_patterns: tuple[str, ...] = ()
    """Configured names or glob patterns scrubbed on top of the built-in ones."""
    values: tuple[tuple[str, str], ...] = ()
    """``(name, value)`` pairs masked in tool output, longest value first."""

    @classmethod
    def from_environment(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        extra_patterns: Iterable[str] = (),
        configured_keys: Iterable[tuple[str, str | None]] = (),
    ) -> SecretPolicy:
        """The policy for ``environ`` (default ``os.environ``): every secret-named variable's
        value is masked, and so is each configured key (``(name, value)``)."""
        env = os.environ if environ is None else environ
        patterns = tuple(extra_patterns)
        pairs = {(n, v) for n, v in env.items() if is_secret_variable(n, v, patterns)}
        pairs.update((n, v) for n, v in configured_keys if v)
        kept = [(n, v) for n, v in pairs if len(v) >= MIN_MASK_CHARS]
        kept.sort(key=lambda pair: (-len(pair[1]), pair[0]))
        return cls(extra_patterns=patterns, values=tuple(kept))

    def scrubbed_environment(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``environ`` (default ``os.environ``) without any secret-named variable."""
        env = os.environ if environ is None else environ
        return {n: v for n, v in env.items() if not is_secret_variable(n, v, self.extra_patterns)}

    @property
    def longest(self) -> int:
        """Length of the longest value masked (0 when there is none)."""
        return len(self.values[0][1]) if self.values else 0

    def safe_cut(self, text: str, at: int, *, keep: Literal["head", "tail"] = "head") -> int:
        """A cut of ``text`` near ``at`` that splits no secret value, so a shortened output
        never shows part of a key that ``mask`` would not recognise. Keeping the head
        (``text[:cut]``), a value across ``at`` moves the cut back to where it starts; keeping
        the tail (``text[cut:]``), forward to where it ends."""
        cut = at
        while True:  # values may overlap: move until no value spans the cut
            moved = cut
            for _, value in self.values:
                end = moved + len(value) - 1
                found = text.find(value, max(0, moved - len(value) + 1), end)
                while found != -1 and found < moved:
                    if found + len(value) > moved:
                        moved = found if keep == "head" else found + len(value)
                        break
                    found = text.find(value, found + 1, end)
            if moved == cut:
                return cut
            cut = moved

    def mask(self, text: str) -> str:
        """``text`` with every known secret value replaced by ``[masked NAME]``."""
        if not self.values or not text:
            return text
        pattern = _compiled(self.values)
        names = {value: name for name, value in self.values}
        return pattern.sub(lambda m: MASK.format(name=names[m.group(0)]), text)


@functools.lru_cache(maxsize=16)
def _compiled(values: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(v) for _, v in values))  # longest first: greedy wins
