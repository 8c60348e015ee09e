"""Deterministic ids: every record's id derives from its parent's id and its own inputs.

Ids read as lineage paths (``stream/candidate/sample``) so any output can be traced to its raw input,
and reruns agree because nothing random or time-based goes in.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

_SLUG = re.compile(r"[^a-zA-Z0-9._-]+")


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def stable_hash(obj: Any, length: int = 12) -> str:
    """Hex digest of the canonical JSON of ``obj`` (strings and bytes hashed as they are)."""
    if isinstance(obj, bytes):
        data = obj
    elif isinstance(obj, str):
        data = obj.encode()
    else:
        data = canonical_json(obj).encode()
    return hashlib.sha256(data).hexdigest()[:length]


def slug(text: str, max_len: int = 40) -> str:
    """A filesystem- and URL-safe fragment of ``text`` for readable ids."""
    s = _SLUG.sub("-", text).strip("-.")
    return (s[:max_len] or "x").lower()


def root_id(kind: str, name: str, key: Any) -> str:
    """Id of a record with no parent (a stream, an environment): ``kind:slug-hash``."""
    return f"{kind}:{slug(name)}-{stable_hash(key, 8)}"


def child_id(parent: str, kind: str, key: Any, label: str | None = None) -> str:
    """Id of a record derived from ``parent`` by inputs ``key``: ``parent/kind[-label]-hash``."""
    tag = f"{kind}-{slug(label, 24)}" if label else kind
    return f"{parent}/{tag}-{stable_hash([parent, kind, key], 8)}"
