"""``dsh bench``: measuring compaction honestly (the method is in ``docs/bench.md``).

* ``scenario`` / ``generate`` — scenario specs (YAML data in ``scenarios/``) and the seeded
  generator that turns a spec into a concrete session (JSONL, byte-identical per seed);
* ``runner`` — one scenario through the real agent loop per backend, jobs in parallel processes;
* ``trace`` / ``cache_rules`` — every request as cache segments, replayed through the DeepSeek,
  OpenAI and Anthropic cache rules with their prices;
* ``scorers`` — survival, recall, superseded leaks, stub stability, pairing, cache, safety;
* ``online`` — the handoff probe of online mode;
* ``report`` / ``suite`` — the run directory: ``report.md``, ``results.json``, PNG plots.
"""
