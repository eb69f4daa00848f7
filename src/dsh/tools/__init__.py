"""Tools the agent can call: files, search, shell, todos; the registry and approval."""
