"""Interoperability with the TypeScript DeepSeek Harness's session logs (docs/interop.md).

``import_upstream`` converts one of its ``session.jsonl`` files into a new dsh session (the
original copied alongside, a report of what changed); ``export_upstream`` writes a dsh session
back in its format for the features both share.
"""

from dsh.interop.importer import ImportResult, import_upstream
from dsh.interop.upstream_read import Conversion, UpstreamFormatError, read_upstream
from dsh.interop.upstream_write import export_upstream

__all__ = [
    "Conversion",
    "ImportResult",
    "UpstreamFormatError",
    "export_upstream",
    "import_upstream",
    "read_upstream",
]
