"""Flags shared by the commands that start a model route (``dsh`` and ``dsh run``).

Imports only click, so ``dsh --help`` stays light."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])


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
                help="Endpoint of an OpenAI-compatible server (Ollama, vLLM, …); implies "
                "--provider openai-compatible when no provider is given.",
            ),
            click.option(
                "--script",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="Script file for the keyless scripted provider (JSON or YAML).",
            ),
        ]
    ):
        command = option(command)
    return command
