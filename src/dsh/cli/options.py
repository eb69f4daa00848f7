"""Flags shared by the commands that start a model route (``dsh``, ``dsh run`` and ``dsh web``).

Imports only click (not even pathlib: see :class:`PathlibPath`), so ``dsh --help`` stays light."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

if TYPE_CHECKING:
    from pathlib import Path

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


def provider_options(command: F) -> F:
    """``--provider``, ``--model``, ``--base-url`` and ``--script``, in that order."""
    for option in reversed(
        [
            click.option(
                "--provider",
                help="deepseek, openai, anthropic, openai-compatible, scripted, replay.",
            ),
            click.option("--model", help="Model name (defaults per provider)."),
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
        ]
    ):
        command = option(command)
    return command


def context_window_option(command: F) -> F:
    """``--context-window`` (``dsh run`` and ``dsh web``): the window of the model route."""
    return click.option(
        "--context-window",
        type=int,
        help="Override the model's window (tokens; at least 1024, checked with the config's keys).",
    )(command)
