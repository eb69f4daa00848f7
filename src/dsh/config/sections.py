"""The configuration's sections and their defaults: one ``msgspec`` struct per TOML table."""

from __future__ import annotations

from typing import Literal

import msgspec


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


ToolChoice = Literal["auto", "required", "none"]


class ProviderOverride(_Section, frozen=True):
    """Generation settings for one route, under ``[provider.overrides."provider:model"]``."""

    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    tool_choice: ToolChoice | None = None
    text_tool_calls: bool | None = None
    stream_idle_timeout: float | None = None
    call_timeout: float | None = None


class ProviderSettings(_Section, frozen=True):
    name: str = "deepseek"
    model: str | None = None
    base_url: str | None = None
    context_window: int | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    """The environment variable holding the key (``dsh.llm.registry.route_api_key``)."""
    headers: dict[str, str] = {}
    """Extra HTTP headers sent on every request of the conversation's route (and of a
    summariser on its provider and endpoint); their rules are ``dsh.config.headers``."""
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    tool_choice: ToolChoice | None = None
    text_tool_calls: bool | None = None
    stream_idle_timeout: float = 300.0
    call_timeout: float = 1200.0
    overrides: dict[str, ProviderOverride] = {}

    def override_for(self, provider: str, model: str) -> ProviderOverride | None:
        """The override for ``provider:model``, else for ``model``, else None."""
        return self.overrides.get(f"{provider}:{model}") or self.overrides.get(model)

    def for_route(self, provider: str, model: str) -> ProviderSettings:
        """These settings with the override for ``provider:model`` (or ``model``) applied."""
        override = self.override_for(provider, model)
        if override is None:
            return self
        changes = {k: v for k, v in msgspec.structs.asdict(override).items() if v is not None}
        return msgspec.structs.replace(self, **changes)


class CompactionOverride(_Section, frozen=True):
    """Budgets for one model, under ``[compaction.overrides."provider:model"]``."""

    threshold_ratio: float | None = None
    retain_ratio: float | None = None
    retain_tokens: int | None = None
    chunk_tokens: int | None = None
    stub_tokens: int | None = None
    state_max_tokens: int | None = None
    stub_region_ratio: float | None = None
    low_watermark_ratio: float | None = None


LARGE_WINDOW_CHUNK = 4000
LARGE_WINDOW_STUB = 200
LARGE_WINDOW_STATE = 4096
"""The budgets of a large window (80k tokens and more); a smaller one scales them down."""


class CompactionSettings(_Section, frozen=True):
    backend: Literal["recallable", "basic", "off"] = "recallable"
    threshold_ratio: float = 0.8
    low_watermark_ratio: float = 0.4
    retain_ratio: float = 0.16
    retain_tokens: int | None = None
    chunk_tokens: int | None = None
    """Unset: scaled to the session's window (``for_window``); 4000 where none is known."""
    stub_tokens: int | None = None
    state_max_tokens: int | None = None
    max_concurrency: int = 32
    stub_region_ratio: float = 0.03
    """About one pass's stubs at full size: a pass compacts roughly half the window, which at
    ``chunk_tokens`` 4000 and ``stub_tokens`` 200 makes stubs of about 3% of it; older ones roll
    up. The stubs stand in every request, so a larger share is paid for on each of them: in the
    offline bench a 0.15 share cost 1.09× basic in a 128k window and 0.03 costs 0.99× (share
    raised to at least four stubs in small windows)."""
    min_stale_ratio: float = 0.0625
    summarizer: str = "extractive"
    summarizer_provider: str | None = None
    summarizer_base_url: str | None = None
    summarizer_api_key_env: str | None = None
    """The variable holding the key of a summariser on a provider or endpoint of its own."""
    summarizer_timeout_s: float = 120.0
    summarizer_context_window: int | None = None
    """The summariser model's own window when it is another model than the conversation's
    (unset: the conversation's): its calls are split to fit it."""
    compaction_retries: int = 1
    max_overflow_retries: int = 1
    prune_threshold_chars: int = 8192
    prune_head_chars: int = 4096
    prune_tail_chars: int = 1024
    overrides: dict[str, CompactionOverride] = {}

    @property
    def chunk(self) -> int:
        """``chunk_tokens``, or the budget of a large window when it is unset."""
        return self.chunk_tokens if self.chunk_tokens is not None else LARGE_WINDOW_CHUNK

    @property
    def stub(self) -> int:
        return self.stub_tokens if self.stub_tokens is not None else LARGE_WINDOW_STUB

    @property
    def state_max(self) -> int:
        return self.state_max_tokens if self.state_max_tokens is not None else LARGE_WINDOW_STATE

    def for_window(self, window: int) -> CompactionSettings:
        """These settings with each unset budget scaled to ``window``: a chunk of window / 8,
        a stub of window / 100 and a state of window / 20 (the proportions of the offline
        bench's scenarios), each at most its large-window value and at least the least
        validation allows; a set budget is kept (a chunk grows to hold four set stubs)."""
        chunk = self.chunk_tokens
        if chunk is None:
            chunk = max(100, min(LARGE_WINDOW_CHUNK, window // 8), 4 * (self.stub_tokens or 0))
        stub = self.stub_tokens
        if stub is None:
            stub = max(20, min(LARGE_WINDOW_STUB, window // 100, chunk // 4))
        state = self.state_max_tokens
        if state is None:
            state = max(100, min(LARGE_WINDOW_STATE, window // 20))
        return msgspec.structs.replace(
            self, chunk_tokens=chunk, stub_tokens=stub, state_max_tokens=state
        )

    def retain_for(self, window: int) -> int:
        """The retained tail as configured: ``retain_tokens``, else ``window × retain_ratio``."""
        if self.retain_tokens is not None:
            return self.retain_tokens
        return int(window * self.retain_ratio)

    def for_route(self, provider: str, model: str) -> CompactionSettings:
        """These settings with the override for ``provider:model`` (or ``model``) applied."""
        override = self.overrides.get(f"{provider}:{model}") or self.overrides.get(model)
        if override is None:
            return self
        changes = {k: v for k, v in msgspec.structs.asdict(override).items() if v is not None}
        return msgspec.structs.replace(self, **changes)


class RecallSettings(_Section, frozen=True):
    read_budget_chars: int = 8000
    search_limit: int = 25
    attach_matches: bool | None = None
    """Attach compacted messages matching a prompt's words (``dsh.agent.recall_matches``);
    None: on where ``provider.text_tool_calls`` is on by default (openai-compatible)."""


DEFAULT_MAX_REPEATED_CALLS = 5
"""How many times one read-only tool call may get the same result in a turn before the turn
stops (``tools.max_repeated_calls``; ``dsh.agent.repeated_calls``)."""


DEFAULT_MAX_CALLS_PER_REPLY = 32
"""How many of one reply's tool calls run; the rest are answered without running
(``tools.max_calls_per_reply``; ``dsh.agent.call_cap``)."""


class ToolSettings(_Section, frozen=True):
    approval: Literal["ask", "auto", "read-only"] = "ask"
    scrub_env: list[str] = []
    allow_commands: list[str] = []
    deny_commands: list[str] = []
    max_repeated_calls: int = DEFAULT_MAX_REPEATED_CALLS
    max_calls_per_reply: int = DEFAULT_MAX_CALLS_PER_REPLY
    attach_mentions: bool = True
    web_fetch: bool = True
    """Offer the ``web_fetch`` tool (kind ``network``: approval guards each call)."""


class McpServerSettings(_Section, frozen=True):
    """One MCP server, under ``[mcp.servers.NAME]``: a program dsh starts and talks to over its
    stdin and stdout (the stdio transport)."""

    command: list[str]
    """The program and its arguments."""
    env: dict[str, str] = {}
    """Set on top of the scrubbed tool environment."""
    cwd: str | None = None
    """Where it runs (a relative path is taken from the workspace); unset: ``$DSH_HOME/mcp``, or
    a trusted project's directory for a server its config defines (``dsh.tools.mcp.placement``)."""
    enabled: bool = True
    timeout_s: float = 120.0
    """Seconds one tool call may take."""
    startup_timeout_s: float = 30.0
    """Seconds to start, answer the handshake and list its tools."""


class McpSettings(_Section, frozen=True):
    servers: dict[str, McpServerSettings] = {}

    @property
    def enabled(self) -> dict[str, McpServerSettings]:
        """The servers to start, in the configured order."""
        return {name: server for name, server in self.servers.items() if server.enabled}


class TrustSettings(_Section, frozen=True):
    directories: list[str] = []
    digests: dict[str, str] = {}


class StoreSettings(_Section, frozen=True):
    backend: Literal["jsonl", "sqlite"] = "jsonl"


DEFAULT_NOTIFY_AFTER_SECONDS = 30.0
"""A turn that ran at least this long rings the terminal's bell when it ends (``ui.notify``)."""


class UiSettings(_Section, frozen=True):
    notify: Literal["bell", "off"] = "bell"
    notify_after_seconds: float = DEFAULT_NOTIFY_AFTER_SECONDS


class Settings(_Section, frozen=True):
    provider: ProviderSettings = ProviderSettings()
    compaction: CompactionSettings = CompactionSettings()
    recall: RecallSettings = RecallSettings()
    tools: ToolSettings = ToolSettings()
    store: StoreSettings = StoreSettings()
    mcp: McpSettings = McpSettings()
    trust: TrustSettings = TrustSettings()
    ui: UiSettings = UiSettings()


DEFAULT_CONTEXT_WINDOW = 128_000
"""The context window assumed when neither config, a flag nor the provider tells one: the one
place this default lives."""

MIN_CONTEXT_WINDOW = 4096
"""The smallest context window a conversation runs in (``provider.context_window``, a flag, a
window a server reports or a session recorded). Every request carries the system prompt and
the tool schemas, about 1.7k tokens of dsh's own with the recall tools (``dsh.agent.room``),
and that fixed part plus the state cap and the retained tail must stay below the compaction
threshold, else no pass can bring a request under it: with the default budgets that takes
about 2,700 tokens, and 4,096 leaves room beside dsh's own part for a short AGENTS.md or a few
MCP tools (the rule itself, on the fixed part as it will be sent, is applied when the agent is
built; a test holds dsh's own part within it at this bound). The one check is
``window_too_small``."""
WINDOW_RULE = f"must be at least {MIN_CONTEXT_WINDOW}"
"""How ``window_too_small`` is said after a key's name."""

MAX_CONTEXT_WINDOW = 16_777_216
"""The largest context window dsh believes (a conversation's or a summariser's: configured,
given as a flag, reported by a server or recorded), 2**24 tokens. The largest window a released
model offers is Llama 4 Scout's 10,485,760 (10 Mi, its ``max_position_embeddings``; Gemini's
is 2M, Claude's and GPT-4.1's 1M), so this leaves it room to grow by half again; a larger
figure is a typo or a server's bug (``99999999999999999999``, ``n_ctx: 1000000000000``), and
believing it would put the compaction threshold out of reach: no pass would ever run. The
one check is ``window_too_large``."""
WINDOW_CEILING_RULE = f"must be at most {MAX_CONTEXT_WINDOW} (no model has a larger window)"
"""How ``window_too_large`` is said after a key's name."""

MIN_SUMMARIZER_WINDOW = 1024
"""The smallest window a summariser on another model runs in
(``compaction.summarizer_context_window``, or what its server reports): under it a call has no
useful room for its instruction, span and answer. A compact call carries no tools, so the
conversation's bound does not apply. The one check is ``summarizer_window_too_small``."""
SUMMARIZER_WINDOW_RULE = f"must be at least {MIN_SUMMARIZER_WINDOW}"
"""How ``summarizer_window_too_small`` is said after a key's name."""


def window_too_small(window: int | None) -> bool:
    """Whether a conversation's ``window`` (configured, given as a flag, reported by a server
    or recorded in a session's log) is under ``MIN_CONTEXT_WINDOW``; None (unknown) is not."""
    return window is not None and window < MIN_CONTEXT_WINDOW


def window_too_large(window: int | None) -> bool:
    """Whether a conversation's or a summariser's ``window`` (configured, given as a flag,
    reported by a server or recorded) is over ``MAX_CONTEXT_WINDOW``; None (unknown) is not."""
    return window is not None and window > MAX_CONTEXT_WINDOW


def summarizer_window_too_small(window: int | None) -> bool:
    """Whether a summariser's ``window`` (configured, reported or recorded) is under
    ``MIN_SUMMARIZER_WINDOW``; None (unknown) is not."""
    return window is not None and window < MIN_SUMMARIZER_WINDOW


SECTIONS: dict[str, type[_Section]] = {
    name: type(default) for name, default in msgspec.structs.asdict(Settings()).items()
}
ENVIRONMENT_NAMES = frozenset(
    {
        "DSH_HOME",  # dsh.config.reading: where the config, sessions and trust live
        "DSH_WEB_TOKEN",  # dsh.cli.web: the web UI's token
        "DSH_WORKSPACE",  # dsh.tools.mcp.placement: the workspace, told to each MCP server
        "DSH_HYPOTHESIS_EXPLORE",  # tests/conftest.py: fresh property-test examples
        "DSH_LLAMA_SERVER",  # benchmarks/real_model.py, state_goal.py: the llama-server
        "DSH_LLAMA_MODEL",  # … and its GGUF model file
        "DSH_LLAMA_EXTRA_ARGS",  # … and more llama-server flags
    }
)
"""``DSH_*`` variables dsh's code, tests and benchmarks read that are not config keys: the
config layer neither reads them nor warns of them as unknown config variables. Every
``"DSH_…"`` name the code quotes is a config variable or one of these
(``tests/test_config_wording.py`` holds the list to the code)."""
USER_ONLY_SECTIONS = frozenset({"trust"})
"""Sections only the user config may set (not a project file, not the environment)."""
APPROVAL_STRICTNESS = {"auto": 0, "ask": 1, "read-only": 2}
