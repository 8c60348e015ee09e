"""String normalisation steps for deduplication keys, and the token similarity used for semantic dedup.

Steps form a registry keyed by name; a user declares the chain (in order) when aggregating. All functions
are pure, so the same records, key and steps always give the same merge."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    (
        "a an and are as at be by for from has in is it its of on or that the their this to was were "
        "will with"
    ).split()
)


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


NORMALIZERS: dict[str, Callable[[str], str]] = {}


def _register(name: str, fn: Callable[[str], str]) -> None:
    if name in NORMALIZERS:
        raise ValueError(f"duplicate normaliser {name!r}")
    NORMALIZERS[name] = fn


_register("lowercase", str.casefold)
_register("strip_punctuation", lambda s: _PUNCT.sub(" ", s).replace("_", " "))
_register("collapse_whitespace", lambda s: _SPACE.sub(" ", s).strip())
_register("strip_accents", _strip_accents)
_register("drop_stopwords", lambda s: " ".join(w for w in s.split() if w.casefold() not in STOPWORDS))
_register("sort_tokens", lambda s: " ".join(sorted(s.split())))


def normalize(text: str, steps: list[str]) -> str:
    """Apply the declared steps in order."""
    for step in steps:
        text = NORMALIZERS[step](text)
    return text


def tokens(text: str) -> list[str]:
    """Lower-case alphanumeric tokens (used by search and similarity)."""
    return _TOKEN.findall(_strip_accents(text).casefold())


def jaccard(a: set[str], b: set[str]) -> float:
    """Token-set overlap |a ∩ b| / |a ∪ b| (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
