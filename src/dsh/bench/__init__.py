"""``dsh bench``: measuring compaction honestly (the method is in ``docs/bench.md``).

* ``scenario`` / ``generate`` — scenario specs (YAML data in ``scenarios/``) and the seeded
  generator that turns a spec into a concrete session (JSONL, byte-identical per seed);
* ``options`` / ``runner`` / ``jobs`` — one scenario through the real agent loop per arm
  (``off``, ``basic``, ``basic+recall``, ``recallable``), many runs in parallel processes;
* ``trace`` / ``cache_rules`` — every request as cache segments (per message, and per content
  block for Anthropic), replayed through the documented DeepSeek, strict DeepSeek, OpenAI and
  Anthropic cache rules with their prices;
* ``scorers`` / ``recall_scores`` / ``score`` — survival by fact status, recall by query kind,
  superseded leaks, stub stability, pairing, cache, safety;
* ``results`` / ``records`` — the typed record of a run (msgspec structs; their JSON form is
  ``runs/*.json`` and ``results.json``'s ``runs[]``);
* ``online`` — the handoff probe of online mode;
* ``suite`` / ``report`` (``headline``, ``tables``, ``verdict``, ``plots``, ``method``) — the run
  directory: ``report.md``, ``results.json``, PNG plots.
"""
