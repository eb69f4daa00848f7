"""``/model`` for every face that has it (the terminal UI, ``dsh web``'s composer): the name its
argument gives, the line that names the model the next turns run on, and the line that says it
changed.

What a face changes is its own business (the terminal UI: its process's route; ``dsh web``: the
session's); the names it takes and the words are the same, so ``/model`` reads the same
wherever it is typed."""

from __future__ import annotations

from dsh.config import model_name_problem
from dsh.errors import UsageError


def model_name(arg: str) -> str | None:
    """The model ``/model ARG`` names: ``ARG`` without the white space around it, spaces inside
    it kept (a server may list a model as ``Qwen2.5 7B Instruct``); None when there is none
    (``/model`` alone names the model in use). A name with a character that does not print (a
    line break, a tab, a terminal escape, a bidi control) is refused with ``UsageError`` in one
    line, the character shown as its escape (``dsh.config.model_name_problem``, the rule the
    config and ``--model`` say too)."""
    name = arg.strip()
    if not name:
        return None
    if (problem := model_name_problem(name)) is not None:
        raise UsageError(f"/model {problem}")
    return name


def model_note(model: str, provider: str, window: int) -> str:
    """What ``/model`` without a name answers."""
    return (
        f"Model: {model} (provider {provider}, context window {window} tokens). "
        "/model NAME switches for the next turns."
    )


def switched_note(model: str) -> str:
    """What ``/model NAME`` answers once the next turns will run on ``model``."""
    return f"Model for the next turns: {model}."
