"""The words of ``/model``, for every face that has it (the terminal UI, ``dsh web``'s
composer): the line that names the model the next turns run on, and the line that says it
changed.

What a face changes is its own business (the terminal UI: its process's route; ``dsh web``: the
session's); the words are the same, so ``/model`` reads the same wherever it is typed."""

from __future__ import annotations


def model_note(model: str, provider: str, window: int) -> str:
    """What ``/model`` without a name answers."""
    return (
        f"Model: {model} (provider {provider}, context window {window} tokens). "
        "/model NAME switches for the next turns."
    )


def switched_note(model: str) -> str:
    """What ``/model NAME`` answers once the next turns will run on ``model``."""
    return f"Model for the next turns: {model}."
