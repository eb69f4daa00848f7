"""Provider error codes, and the ONE place wire errors are mapped to them.

Adapters call ``map_status`` / ``map_exception`` and raise the resulting ``ProviderError``; the
loop only ever looks at ``code`` and ``retryable``.
"""

from __future__ import annotations

from enum import StrEnum

from dsh.errors import ProviderError


class ErrorCode(StrEnum):
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    RATE_LIMITED = "RATE_LIMITED"
    AUTH = "AUTH"
    UNAVAILABLE = "UNAVAILABLE"
    BAD_REQUEST = "BAD_REQUEST"
    TIMEOUT = "TIMEOUT"
    CONNECTION = "CONNECTION"
    INVALID_RESPONSE = "INVALID_RESPONSE"
    UNKNOWN = "UNKNOWN"


RETRYABLE_CODES = frozenset(
    {ErrorCode.RATE_LIMITED, ErrorCode.UNAVAILABLE, ErrorCode.TIMEOUT, ErrorCode.CONNECTION}
)


def provider_error(code: ErrorCode, message: str, *, status: int | None = None) -> ProviderError:
    """A ProviderError whose retryable flag follows the code."""
    return ProviderError(str(code), message, retryable=code in RETRYABLE_CODES, status=status)
