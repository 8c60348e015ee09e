"""Archetypes out of tree: one folder per archetype, laid out like dataclaw's own
(``dataclaw/envcraft/archetypes/<name>/``). The entry point ``ledger = "dataclaw_example_plugins.archetypes"``
in the ``dataclaw.archetypes`` group names this package; every folder in it is an archetype."""
