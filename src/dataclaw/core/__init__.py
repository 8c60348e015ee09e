"""Shared plumbing: ids, errors, the JSONL record store, registries of named components, progress bars."""
