"""The range rules of what a session runs with (its window and its compaction settings), as
problems rather than errors.

Config validation (``validate_settings``) refuses the first problem of a value given now; a
reopened session replaces a recorded value a problem names with the configured one
(``dsh.agent.session_settings``). One rule set, so a value refused when given is not kept when
it comes back from a log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from dsh.config.sections import (
    SUMMARIZER_WINDOW_RULE,
    WINDOW_CEILING_RULE,
    WINDOW_RULE,
    CompactionSettings,
    Settings,
    summarizer_window_too_small,
    window_too_large,
    window_too_small,
)


@dataclass(frozen=True, slots=True)
class Problem:
    """A value that breaks a rule: ``key`` (``compaction.chunk_tokens``) ``rule``."""

    key: str
    rule: str
    involves: tuple[str, ...] = ()
    """The other keys the rule reads (``retain_ratio`` below ``threshold_ratio``)."""

    def __str__(self) -> str:
        return f"config key {self.key} {self.rule}"


def compaction_problems(c: CompactionSettings, where: str = "compaction") -> list[Problem]:
    """Every rule ``c`` breaks, in the order config validation checks them; keys are prefixed
    with ``where``."""
    rules: list[tuple[Any, ...]] = [
        (0 < c.threshold_ratio <= 1, "threshold_ratio", "must be in (0, 1]"),
        (0 <= c.retain_ratio < 1, "retain_ratio", "must be in [0, 1)"),
        (
            c.retain_ratio < c.threshold_ratio,
            "retain_ratio",
            "must be below threshold_ratio (the retained tail must fit under it)",
            ("threshold_ratio",),
        ),
        (
            c.retain_ratio <= c.low_watermark_ratio < c.threshold_ratio,
            "low_watermark_ratio",
            "must be in [retain_ratio, threshold_ratio) (a pass compacts down to it)",
            ("retain_ratio", "threshold_ratio"),
        ),
        (0 < c.min_stale_ratio < 1, "min_stale_ratio", "must be in (0, 1)"),
        (c.summarizer_timeout_s > 0, "summarizer_timeout_s", "must be positive"),
        (
            not summarizer_window_too_small(c.summarizer_context_window),
            "summarizer_context_window",
            SUMMARIZER_WINDOW_RULE,
        ),
        (
            not window_too_large(c.summarizer_context_window),
            "summarizer_context_window",
            WINDOW_CEILING_RULE,
        ),
        (
            c.stub_region_ratio < c.threshold_ratio,
            "stub_region_ratio",
            "must be below threshold_ratio (the stubs must leave room under it)",
            ("threshold_ratio",),
        ),
        (c.retain_tokens is None or c.retain_tokens >= 0, "retain_tokens", "must be at least 0"),
        (c.chunk >= 100, "chunk_tokens", "must be at least 100"),
        (c.stub >= 20, "stub_tokens", "must be at least 20"),
        (
            c.stub <= c.chunk // 4,
            "stub_tokens",
            "must be at most chunk_tokens / 4",
            ("chunk_tokens",),
        ),
        (c.state_max >= 100, "state_max_tokens", "must be at least 100"),
        (c.max_concurrency >= 1, "max_concurrency", "must be at least 1"),
        (0 < c.stub_region_ratio < 1, "stub_region_ratio", "must be in (0, 1)"),
        (c.compaction_retries >= 0, "compaction_retries", "must be at least 0"),
        (c.max_overflow_retries >= 0, "max_overflow_retries", "must be at least 0"),
        (
            c.prune_head_chars + c.prune_tail_chars < c.prune_threshold_chars,
            "prune_head_chars",
            "plus prune_tail_chars must be below prune_threshold_chars",
            ("prune_tail_chars", "prune_threshold_chars"),
        ),
        (
            bool(c.summarizer.strip())
            and not c.summarizer.startswith(":")
            and not c.summarizer.endswith(":"),
            "summarizer",
            "must be extractive, a model name, or provider:model with both parts",
        ),
        (
            model_name_problem(c.summarizer) is None,
            "summarizer",
            model_name_problem(c.summarizer),
        ),
    ]
    problems = []
    for ok, key, rule, *involves in rules:  # a rule between keys names the others last
        if not ok:
            others = tuple(f"{where}.{other}" for other in (involves[0] if involves else ()))
            problems.append(Problem(f"{where}.{key}", rule, others))
    return problems


BASE_URL_RULE = "must be an http:// or https:// URL with a host"
"""How ``base_url_problem`` is said after a key's name."""

MODEL_NAME_RULE = "takes a model name on one line"
"""How ``model_name_problem`` is said after what names the model (a key, ``--model``)."""

MASK = "***"
"""What ``redact`` shows in place of a secret query parameter's value."""
_SECRET_PARAMETERS = ("key", "token", "secret", "passw", "pwd", "auth", "signature", "credential")
"""Parts of a query parameter's name that make its value a secret (``api_key``, ``token``,
``access_token``, ``X-Amz-Signature``, ``password``, ``auth``)."""


def model_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a model (None: it can), after what names it (``config key
    provider.model``, ``--model``, ``/model``): a character that does not print (a line break,
    a tab, a terminal escape, a bidi control), shown as its escape. The name is logged, sent to
    the server and shown on every face. The one rule the config, ``--model`` and ``/model``
    say."""
    if name.isprintable():
        return None
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)
    return f"{MODEL_NAME_RULE}, not '{shown}'"


def redact(url: Any) -> Any:
    """``url`` as it may be logged and shown: without the user and password it may carry
    (they never enter the log; a reopen puts the configured ones back), and with the value of
    each query parameter whose name looks secret (``?api_key=``, ``token``, ``sig``…) masked as
    ``***``. Anything else (None, a string that does not parse as a URL, a URL with
    nothing to hide) is returned as is."""
    if not isinstance(url, str):
        return url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # not a URL (a recorded one validation refuses): no credentials to find
        return url
    redacted = parts
    if parts.username is not None or parts.password is not None:
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 address keeps its brackets
            host = f"[{host}]"
        redacted = parts._replace(netloc=host if port is None else f"{host}:{port}")
    if parts.query:
        redacted = redacted._replace(query="&".join(map(_masked, parts.query.split("&"))))
    return url if redacted == parts else urlunsplit(redacted)


def _masked(parameter: str) -> str:
    name, equals, value = parameter.partition("=")
    plain = unquote_plus(name).lower().replace("-", "").replace("_", "")
    secret = plain == "sig" or any(part in plain for part in _SECRET_PARAMETERS)
    return f"{name}={MASK}" if secret and equals and value else parameter


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an endpoint's base URL (None: it can), as the end of a line naming
    its key: it must parse (``urllib.parse``), with the scheme http or https, a host and a
    readable port, and hold no control character nor white space (a terminal escape pasted
    with it, a newline). The URL itself is shown escaped (``repr``)."""
    shown = repr(redact(url))
    if any(c.isspace() for c in url):
        return f"{BASE_URL_RULE}; {shown} holds white space"
    if not url.isprintable():
        return f"{BASE_URL_RULE}; {shown} holds a control character"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- reading it checks it (a port out of range, not a number)
    except ValueError as exc:
        return f"{BASE_URL_RULE}; {shown} does not parse ({exc})"
    if "://" not in url:  # localhost:11434 parses as the scheme "localhost"
        meant = "http://" + url.lstrip("/")
        return f"{BASE_URL_RULE}; {shown} has no scheme (did you mean {meant!r}?)"
    if parts.scheme.lower() not in ("http", "https"):
        scheme = f"the scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        return f"{BASE_URL_RULE}; {shown} has {scheme}"
    if not parts.hostname:
        return f"{BASE_URL_RULE}; {shown} has no host"
    return None


def base_url_problems(settings: Settings) -> list[Problem]:
    """A problem for each endpoint ``settings`` name that is not a usable base URL
    (``provider.base_url``, ``compaction.summarizer_base_url``)."""
    urls = {
        "provider.base_url": settings.provider.base_url,
        "compaction.summarizer_base_url": settings.compaction.summarizer_base_url,
    }
    problems = []
    for key, url in urls.items():
        why = None if url is None else base_url_problem(url)
        if why is not None:
            problems.append(Problem(key, why))
    return problems


def misfit(c: CompactionSettings, window: int) -> Problem | None:
    """Why budgets ``c`` cannot compact in ``window`` (None: they can): a retained tail or a
    state that alone reaches the threshold would make every pass refuse."""
    threshold = int(window * c.threshold_ratio)
    where = f"threshold ({threshold} tokens in a {window}-token window)"
    if c.retain_tokens is not None and c.retain_tokens >= threshold:
        return Problem("compaction.retain_tokens", f"must be below the {where}")
    if c.for_window(window).state_max + c.retain_for(window) >= threshold:
        return Problem(
            "compaction.state_max_tokens", f"plus the retained tail must be below the {where}"
        )
    return None


def session_problems(settings: Settings) -> list[Problem]:
    """What config validation would refuse in the settings a session records: its window
    (``provider.context_window``), its compaction settings and its endpoints
    (``provider.base_url``, ``compaction.summarizer_base_url``). Whether those budgets compact
    in that window (``misfit``) is not asked again: the window may be one a server reported,
    and a reported window the budgets do not fit is said, not refused (``resolve_route``)."""
    problems = compaction_problems(settings.compaction)
    if window_too_small(settings.provider.context_window):
        problems.append(Problem("provider.context_window", WINDOW_RULE))
    if window_too_large(settings.provider.context_window):
        problems.append(Problem("provider.context_window", WINDOW_CEILING_RULE))
    return problems + base_url_problems(settings)
