"""What a person is told when a model call is retried.

A retry was logged (``llm/retry``) but shown nowhere: an audit on a slow local model saw the
TUI count ``waiting for the model (327 s)`` while dsh had cancelled the call after 300 s
without data and sent it again. Each retry is now also a warning (a toast and ``/warnings``
in the UI, a ``dsh: warning:`` line from ``dsh run``), naming the setting to raise when the
cause is the idle timeout.
"""

from __future__ import annotations

from dsh.errors import ProviderError


def retry_warning(attempt: int, attempts: int, error: ProviderError, delay: float) -> str:
    """The one line for the retry after failed attempt ``attempt`` of at most ``attempts``."""
    when = f"in {delay:.1f} s" if delay >= 0.1 else "now"
    lead = f"model call failed ({error.code}: {error.detail})"
    if error.code == "TIMEOUT":
        lead = f"{error.detail}"
    advice = ""
    if "stream_idle_timeout" in error.detail:
        advice = "; a slow model (a local one after a compaction pass) may need it raised"
    return f"{lead}: sending it again {when} (attempt {attempt + 1} of {attempts}){advice}"
