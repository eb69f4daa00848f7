"""Keeping secrets out of tools (docs/usage.md, "Approval and what commands can reach";
``tools.scrub_env`` in docs/config.md).

Shell commands run with a scrubbed environment: no provider key, no variable of dsh's own that
can carry one (``DSH_PROVIDER_HEADERS``, ``DSH_MCP_SERVERS``: a gateway token, an MCP server's
``env``), and no variable whose name matches ``SECRET_NAME_PATTERNS`` (``*_KEY``, ``*_TOKEN``,
``*_SECRET*``, ``*PASSWORD*``, ``*PASSWD*``, ``*CREDENTIAL*``, ``*_PAT``, ``*_DSN``, ``*_AUTH``,
``*_AUTH_CONFIG``, ``*AUTHTOKEN*``, ``*APIKEY*``, ``*_PASS``, ``*JWT*``, ``*_WEBHOOK*``,
``*DATABASE_URL``, ``*PASSPHRASE*``, ``*CONNECTION_STRING*``, ``*CONNSTR*``, ``*_COOKIE``,
``*_COOKIES``; case-insensitive, and the word may begin the name: ``API_KEY``, ``TOKEN``,
``SECRET_KEY``, ``COOKIE``; and the whole names in ``SECRET_NAMES``: ``MYSQL_PWD``,
``BW_SESSION``, ``OP_SESSION_*``, ``SONAR_LOGIN``), any variable whose value is a URL with a
password (``redis://:pass@host``) or a connection string with a password or key
(``…;Password=…``, ``AccountKey=``, ``SharedAccessKey=``, ``SharedAccessSignature=``, ``Pwd=``),
plus the names or glob patterns configured in ``tools.scrub_env`` and the variables the config
names as holding a key (``provider.api_key_env``; the policy is built in
``dsh.agent.mcp_servers.tool_secrets``). And since a key can still reach a tool
another way (``cat .env``, a shell profile, a file the model reads), the value of every such
variable — and a configured ``provider.api_key``, ``provider.headers`` value or secret-named
MCP server ``env`` value, and a secret given on dsh's own command line (``dsh web --token``,
:func:`add_own_secret`) — is masked in every tool output before it is logged. Values shorter
than :data:`MIN_MASK_CHARS` are not masked (``1`` or ``yes`` would blank ordinary text); they
are still scrubbed from the environment. Where values overlap in a text (one holds another, or
one begins where another ends), the whole run they cover is masked as one, so no part of either
shows beside the other's name.

Names left out on purpose: ``*_SESSION`` (``DESKTOP_SESSION``, ``XDG_SESSION_TYPE``…: the
session managers' own are named above), ``*_LOGIN`` (mostly a user name: masking it would blank
``/home/<user>`` in every output), and ``*COOKIE*`` (``COOKIE_DOMAIN``, ``COOKIE_SECURE``).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from dsh.tools.program_path import clean_path

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
    "*PASSPHRASE*",
    "*CONNECTION_STRING*",
    "*CONNSTR*",
    "*_COOKIE",
    "*_COOKIES",
)
"""Names of secrets by convention (``STRIPE_KEY``, ``GH_PAT``, ``SENTRY_DSN``, ``NPM_AUTH``,
``DOCKER_AUTH_CONFIG``, ``NPM_CONFIG__AUTHTOKEN``, ``OPENAI_APIKEY``, ``SMTP_PASS``,
``CI_JOB_JWT``, ``SLACK_WEBHOOK_URL``, ``DATABASE_URL`` with its password, ``GPG_PASSPHRASE``,
``AZURE_STORAGE_CONNECTION_STRING``, Azure App Service's ``SQLAZURECONNSTR_<name>``, a
``SESSION_COOKIE``); ``*_KEY`` covers ``*_API_KEY``."""
SECRET_NAMES = ("MYSQL_PWD", "PGPASSFILE", "BW_SESSION", "OP_SESSION_*", "SONAR_LOGIN")
"""Whole names (globs): a ``*_PWD`` pattern would take the shell's own ``PWD`` (the working
directory, whose value would then be masked in every output), ``*_SESSION`` the desktop's
``DESKTOP_SESSION``, ``*_LOGIN`` user names. ``BW_SESSION`` unlocks a Bitwarden vault,
``OP_SESSION_<account>`` a 1Password one; ``SONAR_LOGIN`` is SonarQube's token."""
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:[^/?#@\s]+@")
"""A value such as ``redis://:pass@host`` or ``amqp://user:pass@host``: a secret, whatever the
variable is called (``REDIS_URL``, ``BROKER``)."""
_CONNECTION_STRING_SECRET = re.compile(
    r"(?:^|;)\s*(?:password|pwd|accountkey|sharedaccesskey|sharedaccesssignature)\s*=\s*[^;\s]",
    re.IGNORECASE,
)
"""A connection string carrying a password or key (``Server=db;User Id=sa;Password=…``,
Azure's ``…;AccountKey=…`` or ``SharedAccessSignature=…``): a secret, whatever the variable is
called. Its keys are case-insensitive, as ADO.NET and Azure read them."""
MIN_MASK_CHARS = 8
MASK = "[masked {name}]"

_OWN_SECRETS: dict[str, str] = {}
"""Secrets dsh learned on its own command line, by the name a mask gives them."""


def add_own_secret(name: str, value: str) -> None:
    """Mask ``value`` as ``[masked name]`` in every tool output from now on (in the policies
    made after this call: ``dsh.agent.mcp_servers.tool_secrets``). For a secret dsh was given
    other than in a variable or its config, ``dsh web --token``'s: a command line is anyone's
    to read (``ps aux``), a command's included."""
    _OWN_SECRETS[name] = value


def own_secrets() -> list[tuple[str, str]]:
    """The ``(name, value)`` pairs :func:`add_own_secret` was given."""
    return list(_OWN_SECRETS.items())


def is_secret_variable(name: str, value: str, extra_patterns: Iterable[str] = ()) -> bool:
    """True if the variable must not reach a command: its name is a secret's
    (:func:`is_secret_name`) or its value is a URL or a connection string carrying a password
    or key."""
    return (
        is_secret_name(name, extra_patterns)
        or _URL_WITH_PASSWORD.match(value) is not None
        or _CONNECTION_STRING_SECRET.search(value) is not None
    )


def is_secret_name(name: str, extra_patterns: Iterable[str] = ()) -> bool:
    """True if the variable ``name`` must not reach a command (case-insensitive globs)."""
    upper = name.upper()
    if upper in PROVIDER_KEY_VARS or upper in SECRET_CONFIG_VARS:
        return True
    if any(fnmatch.fnmatchcase(upper, whole) for whole in SECRET_NAMES):
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
        """``environ`` (default ``os.environ``) without any secret-named variable, and its
        ``PATH`` without empty or relative entries (:mod:`dsh.tools.program_path`: none of them
        finds a workspace's ``./git`` for a command run by name)."""
        env = os.environ if environ is None else environ
        kept = {n: v for n, v in env.items() if not is_secret_variable(n, v, self.extra_patterns)}
        if "PATH" in kept:
            kept["PATH"] = clean_path(kept["PATH"])
        return kept

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
        """``text`` with every known secret value replaced by ``[masked NAME]``. Values that
        overlap there are masked as one run: ``[masked NAME]`` of the value that covers it all,
        else ``[masked A, B]``, so no part of a value is left beside another's name."""
        if not self.values or not text or _compiled(self.values).search(text) is None:
            return text
        names = {value: name for name, value in self.values}
        shown: list[str] = []
        done = 0
        for start, end, covering in _runs(text, names):
            label = ", ".join(dict.fromkeys(names[value] for value in covering))
            shown += [text[done:start], MASK.format(name=label)]
            done = end
        shown.append(text[done:])
        return "".join(shown)


def _runs(text: str, values: Iterable[str]) -> list[tuple[int, int, list[str]]]:
    """Each run of ``text`` that known values cover (where they overlap, one run): its start,
    its end, and the values it is made of, left to right; one value when it covers the run."""
    found: list[tuple[int, int, str]] = []
    for value in values:
        at = text.find(value)
        while at != -1:
            found.append((at, at + len(value), value))
            at = text.find(value, at + 1)
    found.sort(key=lambda hit: (hit[0], -hit[1]))  # at one start, the longest first
    runs: list[tuple[int, int, list[str]]] = []
    for start, end, value in found:
        if runs and start < runs[-1][1]:
            run_start, run_end, covering = runs[-1]
            if end > run_end:  # sticks out: a value of its own in the run
                runs[-1] = (run_start, end, [*covering, value])
            continue  # inside the run: the values already there cover it
        runs.append((start, end, [value]))
    return runs


@functools.lru_cache(maxsize=16)
def _compiled(values: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(v) for _, v in values))
