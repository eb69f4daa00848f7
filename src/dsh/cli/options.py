"""The route flags and the approval flags: one definition for the three faces that start a model
route (``dsh``, the terminal UI; ``dsh run``; ``dsh web``), so each takes the same flags with the
same help, the same checks and the same meaning.

``route_options`` adds them to a command, which receives them as one ``route_flags:
RouteFlags`` argument; ``RouteFlags.overrides`` maps them onto settings, each flag onto the
config key it stands for (``--compaction`` is ``compaction.backend``, ``--summarizer-base-url`` is
``compaction.summarizer_base_url``, …), so a flag's value reaches the session, and what the
session records, exactly as that key in ``config.toml`` would.

``approval_options`` adds ``--yes`` and ``--allow KINDS`` (``ApprovalFlags``): the user's own
choice for this process, over the configured ``tools.approval`` (``dsh.agent.runtime.
approval_policy``). They are not config keys and a session does not record them: an untrusted
project's ``.dsh/config.toml`` still cannot loosen approval, but the person who typed the flag can.

Imports only click (not even pathlib: see :class:`PathlibPath`), so ``dsh --help`` stays light."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

if TYPE_CHECKING:
    from pathlib import Path

    from dsh.tools.base import ToolKind

F = TypeVar("F", bound=Callable[..., object])


class PathlibPath(click.Path["Path"]):
    """``click.Path`` whose values are ``pathlib.Path``, importing pathlib only for a value.

    ``click.Path(path_type=Path)`` needs the class when the option is declared, which is at
    import, so ``dsh --help`` would load pathlib (and urllib, ipaddress, fnmatch) for nothing.
    """

    def coerce_path_result(self, value: str | os.PathLike[str]) -> Path:
        """The checked value as a ``pathlib.Path``."""
        from pathlib import Path

        return Path(value)


def checked_base_url(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A ``--base-url`` callback: the value, or a usage error naming the flag when it is not an
    http(s) URL with a host (the rule of ``provider.base_url``, ``dsh.config.base_url_problem``),
    before any session or request."""
    if value is None:
        return None
    from dsh.config import base_url_problem  # only when the flag is given: --help stays light

    problem = base_url_problem(value)
    if problem is not None:
        raise click.BadParameter(problem)
    return value


def checked_model(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A ``--model`` and ``--summarizer`` callback: a name with a character that does not
    print (a line break, a tab, a terminal escape) is refused as ``/model`` and the config
    refuse it (``dsh.config.model_name_problem``), the character shown as its escape: the name
    is recorded, sent to the server and shown on every face."""
    from dsh.config import model_name_problem  # only when the flag is given: --help stays light

    if value is not None and (problem := model_name_problem(value)) is not None:
        raise click.BadParameter(problem)
    return value


REPLAY = "replay"
"""The provider ``--replay`` serves model calls with."""

SCRIPTED = "scripted"
"""The provider ``--script`` answers model calls with."""


@dataclass(frozen=True, slots=True)
class RouteFlags:
    """The route flags as given on the command line (None: not given)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    script: Path | None = None
    replay: str | None = None
    """The recorded session whose model calls are served again (``--provider replay``)."""
    context_window: int | None = None
    compaction: str | None = None
    summarizer: str | None = None
    summarizer_base_url: str | None = None

    def given(self) -> list[str]:
        """The flags given, as typed (``--base-url``), in the order ``--help`` lists them."""
        return [
            "--" + field.name.replace("_", "-")
            for field in fields(self)
            if getattr(self, field.name) is not None
        ]

    def provider_name(self) -> str | None:
        """The provider the flags choose: ``--provider``, else ``scripted`` for ``--script``
        (whatever provider the config names: a script never reaches a server), ``replay`` for
        ``--replay``, ``openai-compatible`` for ``--base-url`` (Ollama, vLLM, LM Studio, …)."""
        if self.provider is not None:
            return self.provider
        if self.script is not None:
            return SCRIPTED
        if self.replay is not None:
            return REPLAY
        if self.base_url is not None:
            return "openai-compatible"
        return None

    def check(self) -> None:
        """Refuse, in one line, flags that cannot go together, and ``--provider replay`` without
        the recorded session it serves (before any setting is read or session opened)."""
        problem = self.problem()
        if problem is not None:
            from dsh.errors import UsageError  # only when refused: --help stays light

            raise UsageError(problem)

    def problem(self) -> str | None:
        """Why ``check`` refuses the flags (None: it does not)."""
        if self.replay is not None and self.provider not in (None, REPLAY):
            return f"--replay serves model calls with --provider replay, not {self.provider}"
        if self.script is not None and self.provider not in (None, SCRIPTED):
            return f"--script answers model calls with --provider scripted, not {self.provider}"
        if self.script is not None and self.replay is not None:
            return "--script and --replay both answer model calls: give one of them"
        if self.provider == REPLAY and self.replay is None:
            return (
                "--provider replay needs --replay SESSION (the recorded session whose model "
                "calls it serves again)"
            )
        return None

    def overrides(self) -> dict[str, dict[str, Any]]:
        """The settings the flags set, by section and config key (a flag not given sets none):
        what ``load_settings(overrides=…)`` puts over the config files, and what wins over a
        reopened session's recorded settings (``dsh.agent.session_settings.effective``)."""
        provider = {
            "name": self.provider_name(),
            "model": self.model,
            "base_url": self.base_url,
            "context_window": self.context_window,
        }
        compaction = {
            "backend": self.compaction,
            "summarizer": self.summarizer,
            "summarizer_base_url": self.summarizer_base_url,
        }
        return {
            "provider": {key: value for key, value in provider.items() if value is not None},
            "compaction": {key: value for key, value in compaction.items() if value is not None},
        }


def summarizer_options(command: F) -> F:
    """``--summarizer`` and ``--summarizer-base-url`` (the route faces' and ``dsh compact``'s)."""
    for option in reversed(_SUMMARIZER_OPTIONS):
        command = option(command)
    return command


_SUMMARIZER_OPTIONS = [
    click.option(
        "--summarizer",
        callback=checked_model,
        help="Who summarises for compaction (compaction.summarizer): extractive (keyless), a "
        "model name (tags allowed) or provider:model.",
    ),
    click.option(
        "--summarizer-base-url",
        callback=checked_base_url,
        help="Endpoint of the summariser (compaction.summarizer_base_url), e.g. an "
        "OpenAI-compatible server (Ollama, vLLM, …) with --summarizer openai-compatible:MODEL "
        "(refused with the extractive summariser, which calls no model).",
    ),
]

_ROUTE_OPTIONS = [
    click.option(
        "--provider",
        help="deepseek, openai, anthropic, openai-compatible, scripted, replay.",
    ),
    click.option("--model", callback=checked_model, help="Model name (defaults per provider)."),
    click.option(
        "--base-url",
        callback=checked_base_url,
        help="Endpoint of an OpenAI-compatible server (Ollama, vLLM, …); implies "
        "--provider openai-compatible when no provider is given.",
    ),
    click.option(
        "--script",
        type=PathlibPath(exists=True, dir_okay=False),
        help="Script file for the keyless scripted provider (JSON or YAML).",
    ),
    click.option(
        "--replay",
        metavar="SESSION",
        help="Serve model calls from this recorded session (implies --provider replay); a new "
        "session starts from its recorded settings.",
    ),
    click.option(
        "--context-window",
        type=int,
        help="Override the model's window (provider.context_window: tokens, 4096 to "
        "16777216, checked with the config's keys).",
    ),
    click.option(
        "--compaction",
        type=click.Choice(["recallable", "basic", "off"]),
        help="Compaction backend (compaction.backend; default: a resumed session's own, else "
        "the config's: recallable).",
    ),
    *_SUMMARIZER_OPTIONS,
]

ROUTE_FLAG_NAMES = tuple(field.name for field in fields(RouteFlags))
"""The parameter names of the route flags (``base_url``), in ``--help``'s order."""


def route_options(command: F) -> F:
    """Add the route flags (``RouteFlags``, in its order) to ``command``, which receives them
    as one ``route_flags`` keyword argument, already checked (``RouteFlags.check``) unless a
    subcommand follows (``dsh --provider … sessions``: the group refuses flags given there)."""

    @functools.wraps(command)
    def with_route(*args: Any, **kwargs: Any) -> object:
        route = RouteFlags(**{name: kwargs.pop(name) for name in ROUTE_FLAG_NAMES})
        if click.get_current_context().invoked_subcommand is None:
            route.check()
        return command(*args, route_flags=route, **kwargs)

    wrapped = cast(F, with_route)
    for option in reversed(_ROUTE_OPTIONS):
        wrapped = option(wrapped)
    return wrapped


ALLOW_NAMES: dict[str, ToolKind] = {
    "bash": "shell",
    "shell": "shell",
    "write": "write",
    "network": "network",
    "mcp": "mcp",
}
"""What ``--allow`` takes, and the tool kind each name lets through."""


@dataclass(frozen=True, slots=True)
class ApprovalFlags:
    """``--yes`` and ``--allow`` as given: every tool call allowed (``yes``), else these kinds
    allowed on top of the configured approval mode."""

    yes: bool = False
    allow: frozenset[ToolKind] = frozenset()

    def given(self) -> list[str]:
        """The flags given, as typed, in ``--help``'s order."""
        return [*(["--yes"] if self.yes else []), *(["--allow"] if self.allow else [])]


def parse_allow(allow: str) -> frozenset[ToolKind]:
    """The tool kinds ``--allow`` names (``bash,write``), or a one-line usage error naming the
    first name it does not take."""
    kinds: set[ToolKind] = set()
    for name in filter(None, (part.strip() for part in allow.split(","))):
        if name not in ALLOW_NAMES:
            from dsh.errors import UsageError  # only when refused: --help stays light

            raise UsageError(f"--allow takes bash, write, network and/or mcp, not {name!r}")
        kinds.add(ALLOW_NAMES[name])
    return frozenset(kinds)


_APPROVAL_OPTIONS = [
    click.option(
        "--yes",
        is_flag=True,
        help="Allow every tool call (shell and writes included) without asking: approval mode "
        "auto for this process, over tools.approval.",
    ),
    click.option(
        "--allow",
        default="",
        metavar="KINDS",
        help="Allow these tool kinds without asking: bash,write,network (web_fetch),mcp (MCP "
        "servers), on top of tools.approval.",
    ),
]


def approval_options(command: F) -> F:
    """Add ``--yes`` and ``--allow`` to ``command``, which receives them as one
    ``approval_flags: ApprovalFlags`` keyword argument (``--allow`` checked: ``parse_allow``)."""

    @functools.wraps(command)
    def with_approval(*args: Any, **kwargs: Any) -> object:
        flags = ApprovalFlags(yes=kwargs.pop("yes"), allow=parse_allow(kwargs.pop("allow")))
        return command(*args, approval_flags=flags, **kwargs)

    wrapped = cast(F, with_approval)
    for option in reversed(_APPROVAL_OPTIONS):
        wrapped = option(wrapped)
    return wrapped
