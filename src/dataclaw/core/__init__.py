"""Shared plumbing: ids, errors, the JSONL record store, config."""
