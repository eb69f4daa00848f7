"""The only place wire formats exist: provider adapters, keyless providers, error mapping."""
