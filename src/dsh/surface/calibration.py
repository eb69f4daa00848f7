"""Calibrating the token heuristic against the provider's own count (docs/architecture.md,
"Token accounting").

The heuristic (``dsh.surface.tokens``, about four characters a token) undercounts what a real
tokenizer makes of code, JSON and text that is not English: Qwen2.5-Coder's counted a request
carrying a Python file about 30% above it. When the provider reported the size of a request
whose surface dsh also priced, ``reported / estimated`` says how far off the heuristic is for
this session's material, and ``Session.measure`` scales by it what the provider has not counted
(everything appended since that request, or the whole request once that count no longer
applies), so the pressure check and the threshold see about what the server will count.

The ratio is kept as the two integers and scaling rounds up, so a provider that counts exactly
as the heuristic (the keyless ``scripted`` one, the bench) scales nothing: ``scale(n) == n``.
An estimate under ``MIN_ESTIMATE`` tokens is too small for its ratio to mean anything, and a
ratio outside ``[MIN_RATIO, MAX_RATIO]`` is a count that went wrong (a stand-in server's fixed
figure, a count of part of the request), not a tokenizer: neither calibrates anything, so a
broken count never makes dsh believe there is more room than its heuristic says.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

MIN_ESTIMATE = 1_000
"""The smallest estimated request whose reported size calibrates the heuristic."""
MIN_RATIO = Fraction(1, 2)
MAX_RATIO = Fraction(8)
"""The ratios a tokenizer gives. English prose counts a little under the heuristic, code and
JSON up to about 1.3× (Qwen2.5-Coder), accented Latin text about 2× and Chinese about 6× (17k
characters: the heuristic's ~4.3k against Qwen2.5's ~27k); under half would take more than
eight characters a token."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """The provider's count of one request (``reported``) against dsh's heuristic of the same
    request (``estimated``), from the ``assistant/message`` at ``anchor_seq`` that answered it;
    made by ``calibration``, which keeps the ratio within its bounds."""

    anchor_seq: int
    reported: int
    estimated: int

    @property
    def ratio(self) -> Fraction:
        """``reported / estimated``."""
        return Fraction(self.reported, self.estimated)

    def scale(self, tokens: int) -> int:
        """``tokens`` of the heuristic as the provider would count them: times the ratio,
        rounded up (a ratio of exactly 1 changes nothing)."""
        ratio = self.ratio
        return -((-tokens * ratio.numerator) // ratio.denominator)


def credible(reported: int, estimated: int) -> bool:
    """Whether a provider's count of a request can be a tokenizer's count of it: positive, and
    within ``[MIN_RATIO, MAX_RATIO]`` of the heuristic once the estimate is ``MIN_ESTIMATE`` or
    more (a smaller one is too small to judge by). A count outside (a server reporting 100 for
    every request, or only what its prompt cache did not hold, as Ollama does; an absurd
    figure) is not used as the request's size either: ``Session.measure`` goes by the heuristic."""
    if reported <= 0:
        return False
    return estimated < MIN_ESTIMATE or MIN_RATIO <= Fraction(reported, estimated) <= MAX_RATIO


def calibration(anchor_seq: int, reported: int, estimated: int) -> Calibration | None:
    """The calibration one reported request gives: None when its estimate is under
    ``MIN_ESTIMATE`` or the ratio is outside ``[MIN_RATIO, MAX_RATIO]`` (no count to go by)."""
    if estimated < MIN_ESTIMATE or not credible(reported, estimated):
        return None  # too small to calibrate by, or no tokenizer's count
    return Calibration(anchor_seq, reported, estimated)


def scaled(calibrated: Calibration | None, tokens: int) -> int:
    """``tokens`` scaled by ``calibrated``; unchanged without one."""
    return tokens if calibrated is None else calibrated.scale(tokens)


def calibration_note(calibrated: Calibration | None) -> str:
    """How a figure was calibrated, in words, for the faces to say (empty: it was not, or by a
    ratio of exactly 1, which scales nothing)."""
    if calibrated is None or calibrated.ratio == 1:
        return ""
    return f"dsh's estimate ×{float(calibrated.ratio):.2f}, as the server counted its last request"
