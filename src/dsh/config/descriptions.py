"""One line per configuration key, shown in ``docs/config.md`` (``python -m dsh.reference``)."""

from __future__ import annotations

DESCRIPTIONS: dict[str, str] = {
    "provider.name": "deepseek, openai, anthropic, openai-compatible, scripted or replay.",
    "provider.model": "Model name; each provider has a default but openai-compatible, which "
    "uses the one model its server lists at /v1/models (said once, recorded in the session); "
    "a server listing several needs this (the error names them).",
    "provider.base_url": "Endpoint of an OpenAI-compatible server (Ollama, vLLM, llama.cpp): "
    "an http:// or https:// URL with a host.",
    "provider.context_window": "Override the model's context window (tokens); at least 4096, "
    "as a window a server reports must be (less is refused at start), and at most 16777216, "
    "more than any model offers (a server reporting more is ignored, with a notice); the "
    "system prompt and "
    "tools as sent must also leave room under the compaction threshold for the state and "
    "the retained tail (refused at start, naming their sizes).",
    "provider.api_key": "API key, sent to whatever endpoint the route has (this one wins over "
    "the variables); prefer an environment variable. Never logged.",
    "provider.api_key_env": "The environment variable holding the key (it must then be set); "
    "an environment variable name (letters, digits and _). "
    "Unset: the provider's own (DEEPSEEK_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY, read "
    "whatever the base_url); openai-compatible reads OPENAI_API_KEY only for "
    "https://api.openai.com and sends no key to any other server, so a server started with a "
    'key (vLLM --api-key, llama-server --api-key) needs api_key_env = "MY_VAR" or api_key. '
    "The variable is kept out of tool environments and its value masked in tool output.",
    "provider.headers": "Extra HTTP headers sent on every request of the conversation's route "
    '(chat and window probe), e.g. [provider.headers] "X-Gateway-Token" = "…" for an API '
    "gateway (a header OPENAI_CUSTOM_HEADERS or ANTHROPIC_CUSTOM_HEADERS used to add, which "
    "dsh sends only to api.openai.com / api.anthropic.com); a summariser on the conversation's "
    "provider and endpoint sends them too, one elsewhere does not. A later layer's table "
    "replaces an earlier one's; an untrusted ./.dsh/config.toml may only repeat the user's. "
    "Names are HTTP tokens, each once; values printable ASCII without a line break or white "
    "space at either end; Authorization and X-Api-Key (the key settings send the key), Host, "
    "Content-Length, Transfer-Encoding and Connection are refused. Values are never logged "
    "and are masked in tool output and in a server's error text.",
    "provider.max_output_tokens": "Output bound sent with every conversation request "
    "(max_tokens), and with summariser calls on the conversation's own route; at least 1; "
    "unset: a default per provider and model (4096 for openai-compatible), lowered to what the "
    "window leaves above the compaction threshold (820 in a 4096 window).",
    "provider.temperature": "Sampling temperature sent with every request, in [0, 2] (unset: "
    "the server's; not sent to Claude Sonnet 5 and later, which refuse it: one warning).",
    "provider.top_p": "Nucleus sampling top_p sent with every request, in (0, 1] (unset: the "
    "server's; not sent to Claude Sonnet 5 and later, which refuse it: one warning).",
    "provider.tool_choice": "auto, required or none (OpenAI-compatible routes only).",
    "provider.text_tool_calls": "Recover a reply whose whole text is JSON tool calls (bare, "
    "fenced, in <tool_call> or <tools> tags) as tool calls, and read-only calls in a fence "
    "inside prose; any other call written in the text is not run and is said under the reply "
    "(and after dsh run's turn); unset: on for openai-compatible, off for the others.",
    "provider.stream_idle_timeout": "Seconds without a stream chunk (the first included) before "
    "the call fails with a retryable TIMEOUT; positive.",
    "provider.call_timeout": "Seconds one model call may take in all, retries included "
    "(then TIMEOUT, not retried); positive.",
    "provider.overrides": 'Per-route settings: [provider.overrides."provider:model"] (or a '
    "model name) with max_output_tokens, temperature, top_p, tool_choice, text_tool_calls, "
    "stream_idle_timeout, call_timeout. A summariser route's max_output_tokens bounds one "
    "summariser call: a pass whose answer would need more is split into the fewest calls "
    "that fit, and a stub_tokens or state_max_tokens above it is asked for at the bound.",
    "compaction.backend": "recallable (index stubs + state, recall tools), basic, or off.",
    "compaction.threshold_ratio": "Compact when the next request reaches window × this; in (0, 1].",
    "compaction.low_watermark_ratio": "A pressure pass compacts down to about window × this "
    "(hysteresis: the next crossing is far away); in [retain_ratio, threshold_ratio).",
    "compaction.retain_ratio": "Keep at least window × this of recent history verbatim; in "
    "[0, 1) and below threshold_ratio.",
    "compaction.retain_tokens": "Keep at least this many tokens verbatim (overrides the ratio); "
    "at least 0, and below the threshold (window × threshold_ratio) when the window is set.",
    "compaction.chunk_tokens": "Recallable: target size of the slice one index stub covers; "
    "at least 100; unset: window / 8, at most 4000.",
    "compaction.stub_tokens": "Recallable: size of one index stub; at least 20 and at most "
    "chunk_tokens / 4; unset: window / 100, at most 200.",
    "compaction.state_max_tokens": "Cap of the state checkpoint (and of a basic summary); at "
    "least 100, and when the window is set, this plus the retained tail must be below the "
    "threshold (window × threshold_ratio); unset: window / 20, at most 4096 (a session records "
    "the value it ran with).",
    "compaction.max_concurrency": "Recallable: summary calls run at once within a pass; at least "
    "1.",
    "compaction.stub_region_ratio": "Recallable: the frozen stubs' share of the window (at "
    "least four stubs); in (0, 1) and below threshold_ratio; when new stubs would overflow it "
    "a pass makes fewer, coarser ones, and when not one fits it rolls the oldest up by code "
    "into one rollup checkpoint.",
    "compaction.min_stale_ratio": "Least stale history for a pressure pass: window × this, "
    "at most chunk_tokens / 2; in (0, 1).",
    "compaction.summarizer_timeout_s": "Seconds a summariser model call may take; positive.",
    "compaction.summarizer_context_window": "Context window of the summariser model in tokens "
    "when it is another model (unset: its provider's known window or what its server reports, "
    "else the conversation's); a pass's calls are split to fit it. At least 1024: a server "
    "that reports less is refused at start, and a value a session recorded before is replaced by "
    "this one on reopen; at most 16777216 (a server reporting more is ignored, with a notice).",
    "compaction.summarizer": "extractive (keyless, deterministic), a model name on the "
    "conversation's provider (tags included: qwen2.5-coder:0.5b), or provider:model when the "
    "prefix is a known provider; it must be extractive, a model name, or provider:model with "
    "both parts (not empty, and neither starting nor ending with :).",
    "compaction.summarizer_provider": "Provider of the summariser model (unset: the prefix of "
    "compaction.summarizer if it is a known provider, else openai-compatible when "
    "summarizer_base_url is another endpoint than the conversation's, else the conversation's).",
    "compaction.summarizer_base_url": "Endpoint of the summariser, an http:// or https:// URL "
    "with a host (unset: the conversation's "
    "base_url when the summariser uses the conversation's provider). The conversation's API key "
    "is only sent to the conversation's own endpoint.",
    "compaction.summarizer_api_key_env": "The environment variable holding the key of a "
    "summariser on a provider or endpoint of its own (it must then be set), an environment "
    "variable name (letters, digits and _); unset: its "
    "provider's own, by the rule of provider.api_key_env (none for an openai-compatible server "
    "other than api.openai.com). A summariser on the conversation's provider and endpoint uses "
    "the conversation's key. Kept out of tool environments like provider.api_key_env.",
    "compaction.overrides": 'Per-model budgets: [compaction.overrides."provider:model"] with '
    "threshold_ratio, low_watermark_ratio, retain_ratio, retain_tokens, chunk_tokens, "
    "stub_tokens, state_max_tokens, stub_region_ratio.",
    "compaction.compaction_retries": "Extra passes allowed when one pass leaves the context "
    "above the threshold; at least 0.",
    "compaction.max_overflow_retries": "Retries of a request after a context-overflow error, "
    "per turn; at least 0.",
    "compaction.prune_threshold_chars": "Tool results longer than this are pruned under pressure.",
    "compaction.prune_head_chars": "Characters kept from the start of a pruned result; this "
    "plus prune_tail_chars must be below prune_threshold_chars.",
    "compaction.prune_tail_chars": "Characters kept from the end of a pruned result.",
    "recall.read_budget_chars": "history_read page size in characters, and the most one "
    "history_search answer (or dsh recall search without --limit) takes; at least 50.",
    "recall.search_limit": "Default maximum snippets returned by history_search and dsh recall "
    "search; in [1, 200].",
    "recall.attach_matches": "After a prompt, give the model up to 3 snippets of compacted "
    "messages that hold most of its rarer words (a note the transcript shows as Context from "
    "recall), for models that do not search on their own; unset: on for openai-compatible, "
    "off for the others.",
    "tools.approval": "ask (interactive default), auto, or read-only.",
    "tools.allow_commands": "Shell commands the bash tool runs without asking, in every "
    "approval mode (read-only too): each a command's words as the shell splits them, exactly "
    '("git status"), or followed by any further words when the last is * ("pytest *"). A '
    "command holding ; & | < > ` $( ${ or a line break never matches one. Only from the user "
    "config, the environment (comma-separated) or a trusted project config, whose rules are "
    "added to the user's.",
    "tools.deny_commands": "Shell commands the bash tool refuses in every approval mode, auto "
    "(--yes) included, over allow_commands and an always answer; patterns as allow_commands, "
    "matched against each command of a line (cut at ; & | < > ` $( and the like, leading "
    "VAR=value, sudo, env… skipped). A guard against mistakes, not a sandbox. A project config, "
    "trusted or not, adds to the user's.",
    "tools.scrub_env": "Extra variable names or glob patterns kept out of shell commands (on top "
    "of provider keys, DSH_PROVIDER_HEADERS, DSH_MCP_SERVERS, *_KEY, *_TOKEN, *_SECRET*, "
    "*PASSWORD*, *PASSWD*, *CREDENTIAL*, *_PAT, *_DSN, *_AUTH, *_AUTH_CONFIG, *AUTHTOKEN*, "
    "*APIKEY*, *_PASS, *JWT*, *_WEBHOOK*, *DATABASE_URL, *PASSPHRASE*, *CONNECTION_STRING*, "
    "*CONNSTR*, *_COOKIE, *_COOKIES, MYSQL_PWD, BW_SESSION, OP_SESSION_*, SONAR_LOGIN, and any "
    "variable whose value is a URL with a password or a connection string with a Password=, "
    "AccountKey=, SharedAccessKey=, SharedAccessSignature= or Pwd=); their values are masked in "
    "tool output.",
    "tools.max_repeated_calls": "Stop a turn when the model has made the same read-only tool "
    "call (same tool, same arguments) this many times in it and got the same result each "
    "time; from the second time on, the result tells the model so. A write, a command, a "
    "fetch, a todo update or an MCP call in between starts the count again. 0 or at least 2 "
    "(1 is refused: a turn would end at its first read-only call); 0: no limit.",
    "tools.max_calls_per_reply": "Run at most this many of one reply's tool calls; each call "
    "past it is answered with an error result saying it was not run and why (the model is "
    "asked to ask for fewer at a time), never offered for approval, and one warning says so. "
    "Guards against a server that ignores max_tokens or a looping model asking for hundreds "
    "of commands at once. At least 1; 0: no limit.",
    "tools.attach_mentions": "Attach what a prompt names with @path: a file as read_file shows "
    "it (secret values masked), a directory's listing, each a note after the prompt; all of "
    "them together take at most about a quarter of the context window. false: @path stays "
    "text only.",
    "tools.web_fetch": "Offer the model the web_fetch tool (GET an http(s) URL, its HTML as "
    "Markdown). Its kind is network: asked for under ask, run unasked with --allow network or "
    "--yes, denied under read-only and in a headless run without those flags. false: the model "
    "is not offered it (a call is answered as an unknown tool).",
    "mcp.servers": "MCP servers whose tools the model may call, one table each: "
    '[mcp.servers.NAME] with command = ["program", "arg", …] and optionally env, cwd, enabled, '
    "timeout_s, startup_timeout_s (below). NAME is 1 to 40 letters, digits, _ or -; the servers "
    "of all layers add up by name. An untrusted ./.dsh/config.toml may not add one (ignored "
    "with a warning naming it).",
    "mcp.servers.NAME.command": "The program and its arguments, started with the scrubbed tool "
    "environment (see tools.scrub_env) plus DSH_WORKSPACE (the workspace's path) in a session "
    "of its own under dsh's process keeper, so whatever it starts is stopped with it (and when "
    "dsh exits); dsh speaks MCP to it over its stdin and stdout. {workspace} in an argument is "
    "replaced by the workspace's path (the filesystem server's root: \"{workspace}\").",
    "mcp.servers.NAME.env": "Variables set for it on top of the scrubbed environment and "
    "DSH_WORKSPACE (a key it needs goes here); {workspace} in a value is replaced by the "
    "workspace's path.",
    "mcp.servers.NAME.cwd": "Where it runs; a relative path is taken from the workspace "
    '("." is the workspace), {workspace} is replaced by its path. Unset: $DSH_HOME/mcp, a '
    "directory of dsh's own, so that its launcher does not run a cloned repository's code "
    "(npx runs the package in ./node_modules, python -m imports ./NAME.py); a server that a "
    "trusted project's .dsh/config.toml defines runs in that project's directory. Set it to "
    "the workspace only for a program that loads no code from where it runs.",
    "mcp.servers.NAME.enabled": "false keeps it configured but not started.",
    "mcp.servers.NAME.timeout_s": "Seconds one tool call may take (positive); then the call is "
    "an error result (TIMEOUT) and the server keeps running.",
    "mcp.servers.NAME.startup_timeout_s": "Seconds it may take to start, answer the MCP "
    "handshake and list its tools (positive); then the session runs without its tools (a "
    "warning names it).",
    "trust.directories": "Workspaces whose ./.dsh/config.toml may loosen safety settings "
    "(managed by `dsh trust`; only read from the user config).",
    "trust.digests": "Each trusted workspace's ./.dsh/config.toml as it was when trusted "
    '("sha256:…", or "absent"): a file changed since is untrusted again, with a warning, until '
    "`dsh trust` is run there again (managed by `dsh trust`).",
    "store.backend": "jsonl (one file per session) or sqlite (one database).",
    "ui.notify": "bell: the terminal UI rings the terminal's bell when an approval starts "
    "waiting for you and when a turn that ran at least notify_after_seconds ends (not one you "
    "cancelled); off: no bell. dsh web marks its tab's title while an approval waits.",
    "ui.notify_after_seconds": "How long a turn must run for its end to ring the bell "
    "(seconds, at least 0; 0: every turn).",
}
