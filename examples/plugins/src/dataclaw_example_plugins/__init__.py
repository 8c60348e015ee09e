"""Worked examples of dataclaw plugins, one module (or folder) each; docs/extending.md walks through them."""
