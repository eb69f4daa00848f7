"""What Anthropic's current models refuse, read from the model's name, and the request body
fitted to it (``fit_body``).

Per Anthropic's model pages and migration guides (docs/providers.md lists them): from Claude
Sonnet 5 on, a sampling parameter (``temperature``, ``top_p``, ``top_k``) and manual extended
thinking (``thinking: {type: enabled, budget_tokens}``) return 400, adaptive thinking being on
by default; Claude Opus 4.7 and later, Fable and Mythos take adaptive thinking only. Claude
Sonnet 5.5 also refuses forced tool use (``tool_choice`` ``any`` / ``tool``) and
``thinking: {type: disabled}`` (``between_tools`` replaces it), and returns the text it writes
between tool calls in thinking blocks whose default ``display`` is ``omitted``: dsh asks for
``summarized`` so that text reaches the user, shown as reasoning.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

SAMPLING_PARAMS = ("temperature", "top_p", "top_k")

_NAME = re.compile(r"claude-(opus|sonnet|haiku|fable|mythos)-(\d{1,2})(?:-(\d{1,2}))?(?:-|$)")
_ADAPTIVE_ONLY_FAMILIES = ("fable", "mythos")


def _version(model: str) -> tuple[str, int, int] | None:
    """``(family, major, minor)`` of a Claude model name (a dated snapshot's date ignored)."""
    match = _NAME.match(model.removeprefix("anthropic/"))
    if match is None:
        return None
    return match[1], int(match[2]), int(match[3] or 0)


def refuses_sampling(model: str) -> bool:
    """Whether ``model`` answers a sampling parameter with 400 (Claude Sonnet 5 and later)."""
    version = _version(model)
    return version is not None and version[0] == "sonnet" and version[1:] >= (5, 0)


def adaptive_only(model: str) -> bool:
    """Whether ``model`` refuses manual extended thinking (``type: enabled``)."""
    version = _version(model)
    if version is None:
        return False
    family, *number = version
    if family in _ADAPTIVE_ONLY_FAMILIES:
        return True
    if family == "opus":
        return tuple(number) >= (4, 7)
    return family == "sonnet" and tuple(number) >= (5, 0)


def thinking_in_blocks_between_tools(model: str) -> bool:
    """Whether ``model`` refuses forced tool use and writes its text between tool calls in
    thinking blocks (Claude Sonnet 5.5 and later)."""
    version = _version(model)
    return version is not None and version[0] == "sonnet" and version[1:] >= (5, 5)


def sampling_dropped(model: str, params: Mapping[str, Any]) -> list[str]:
    """The sampling parameters in ``params`` that ``model`` refuses (``refuses_sampling``)."""
    if not refuses_sampling(model):
        return []
    return [name for name in SAMPLING_PARAMS if params.get(name) is not None]


def fit_body(model: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (the request's parameters) without what ``model`` refuses: sampling parameters,
    manual thinking (sent as adaptive), forced tool choice (sent as ``auto``); on Sonnet 5.5
    adaptive thinking is asked ``display: summarized`` unless the body sets a display
    (``between_tools`` takes none: its thinking blocks come back summarized)."""
    fitted = {k: v for k, v in body.items() if k not in sampling_dropped(model, body)}
    thinking = fitted.get("thinking")
    if adaptive_only(model) and isinstance(thinking, Mapping) and thinking.get("type") == "enabled":
        fitted["thinking"] = {
            "type": "adaptive",
            **({"display": thinking["display"]} if "display" in thinking else {}),
        }
    if thinking_in_blocks_between_tools(model):
        choice = fitted.get("tool_choice")
        if isinstance(choice, Mapping) and choice.get("type") in ("any", "tool"):
            fitted["tool_choice"] = {"type": "auto"}
        thinking = fitted.get("thinking")
        if isinstance(thinking, Mapping) and thinking.get("type") == "disabled":
            fitted["thinking"] = {"type": "between_tools"}
        thinking = fitted.get("thinking")
        if thinking is None:
            fitted["thinking"] = {"type": "adaptive", "display": "summarized"}
        elif (
            isinstance(thinking, Mapping)
            and thinking.get("type") == "adaptive"
            and "display" not in thinking
        ):
            fitted["thinking"] = {**thinking, "display": "summarized"}
    return fitted


def retired_model_hint(model: str, message: str) -> str | None:
    """The one line said when Anthropic answers that ``model`` does not exist (its 404
    ``not_found_error`` names the model): it may be retired, and how to switch."""
    if "model" not in message.lower() or model not in message:
        return None
    other = CURRENT_SONNET if model != CURRENT_SONNET else "MODEL"
    return (
        f"model {model} does not exist on this server or is retired; switch with "
        f"/model {other} (or --model {other})"
    )


CURRENT_SONNET = "claude-sonnet-5-5"
"""Anthropic's current Sonnet: dsh's default Anthropic model (``dsh.llm.registry``)."""
