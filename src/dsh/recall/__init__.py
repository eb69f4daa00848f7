"""Recall: the model's way back into compacted history (docs/compaction.md, "The two recall
tools").

``history_read`` and ``history_search`` read the session log only (no model call; the rendered
spans and word indexes they keep are derived from it): a checkpoint ``c<summarySeq>`` names a
``compaction/summary``, whose shadowed span is rendered with the shared transcript renderer.
``dsh recall`` on the CLI prints the same text.
"""

from dsh.recall.checkpoints import (
    CHECKPOINT_NOT_FOUND,
    INVALID_ARGUMENT,
    INVALID_OFFSET,
    NO_COMPACTED_HISTORY,
    NON_AGENT_CALLER,
    ORPHANED_COMPACTION,
    Checkpoint,
    RecallError,
    RecallErrorCode,
    checkpoint_id,
    list_checkpoints,
    parse_checkpoint_id,
    resolve_checkpoint,
)
from dsh.recall.render import (
    INDEX_LABEL,
    PRIOR_STATE_LABEL,
    SpanCache,
    checkpoint_label,
    render_node,
    render_span,
)
from dsh.recall.tool_specs import (
    HISTORY_READ,
    HISTORY_READ_DESCRIPTION,
    HISTORY_READ_PARAMETERS,
    HISTORY_SEARCH,
    HISTORY_SEARCH_DESCRIPTION,
    HISTORY_SEARCH_PARAMETERS,
    READ_A_MATCH,
    RECALL_PROMPT_SECTION,
    RECALL_TOOL_NAMES,
)
from dsh.recall.tools import (
    SEARCHED_INSTEAD,
    HistoryReadTool,
    HistorySearchTool,
    SearchAnswer,
    SearchedEverywhere,
    error_output,
    read_checkpoint,
    recall_tools,
    search_answer,
    search_history,
)

__all__ = [
    "CHECKPOINT_NOT_FOUND",
    "HISTORY_READ",
    "HISTORY_READ_DESCRIPTION",
    "HISTORY_READ_PARAMETERS",
    "HISTORY_SEARCH",
    "HISTORY_SEARCH_DESCRIPTION",
    "HISTORY_SEARCH_PARAMETERS",
    "INDEX_LABEL",
    "INVALID_ARGUMENT",
    "INVALID_OFFSET",
    "NON_AGENT_CALLER",
    "NO_COMPACTED_HISTORY",
    "ORPHANED_COMPACTION",
    "PRIOR_STATE_LABEL",
    "READ_A_MATCH",
    "RECALL_PROMPT_SECTION",
    "RECALL_TOOL_NAMES",
    "SEARCHED_INSTEAD",
    "Checkpoint",
    "HistoryReadTool",
    "HistorySearchTool",
    "RecallError",
    "RecallErrorCode",
    "SearchAnswer",
    "SearchedEverywhere",
    "SpanCache",
    "checkpoint_id",
    "checkpoint_label",
    "error_output",
    "list_checkpoints",
    "parse_checkpoint_id",
    "read_checkpoint",
    "recall_tools",
    "render_node",
    "render_span",
    "resolve_checkpoint",
    "search_answer",
    "search_history",
]
