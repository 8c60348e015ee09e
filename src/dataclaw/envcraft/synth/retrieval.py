"""Archetype retrieval (EnvCraft §3.2): score the nine archetypes by keyword overlap with the
specification, keep the top two, and hand over their blueprint text and reference code.

Deterministic: the spec's words (names, descriptions, rules, tools; snake_case and camelCase split, a
light suffix stemmer) are matched against each archetype's keywords (its folder's ``archetype.yaml``);
the score is the number of distinct keywords matched. Ties go to the paper's order. Archetypes a
scenario pins (``ScenarioSpec.archetypes``) come first. When nothing matches, the reference package
(transactional_workspace, blueprint 1) is returned, marked ``fallback``, so generation always has an anchor.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.envcraft.scenarios import Blueprint, ScenarioSpec, blueprint, blueprints
from dataclaw.envcraft.synth.spec import ESpec, TSpec

TOP_K = 2
FALLBACK = "transactional_workspace"
_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_SUFFIXES = (("ings", 4), ("ing", 4), ("ions", 5), ("ion", 5), ("ies", 3), ("es", 4), ("ed", 4), ("s", 4))


def stem(word: str) -> str:
    """A light stemmer: scheduling/schedules/schedule → ``schedul``; enough for keyword overlap."""
    w = word.lower()
    for suffix, min_stem in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= min_stem:
            w = w[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def terms(text: str) -> set[str]:
    """The stems of ``text`` (snake_case, kebab-case and camelCase split into words)."""
    return {stem(w) for w in _WORD.findall(text.replace("_", " ").replace("-", " "))}


def spec_text(spec: ESpec, tools: TSpec | None = None, scenario: ScenarioSpec | None = None) -> str:
    """Everything retrieval reads from a specification, as one text."""
    parts: list[str] = [spec.environment_name, spec.task_description, *spec.domains]
    for e in spec.entities:
        parts += [e.name, e.description, *(a.name for a in e.attributes), *e.statuses]
    parts += [f"{f.name} {f.description}" for f in spec.state_fields]
    parts += [r.description for r in spec.business_rules]
    parts += [s.task_prompt for s in spec.scenarios]
    if tools is not None:
        parts += [f"{t.name} {t.description}" for t in tools.tools]
    if scenario is not None:
        parts.append(scenario.text())
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class Retrieved:
    """One retrieved archetype: its score, the keywords that matched, and what goes into the prompt."""

    blueprint: Blueprint
    score: int
    matched: tuple[str, ...]
    pinned: bool = False
    fallback: bool = False

    @property
    def name(self) -> str:
        return self.blueprint.name

    def reference_files(self) -> list[Path]:
        return self.blueprint.reference_files()

    def to_dict(self) -> dict[str, Any]:
        """The record form (paths relative to the archetypes folder, so records do not hold host paths)."""
        root = self.blueprint.reference_dir().parent
        return {
            "name": self.name,
            "number": self.blueprint.number,
            "score": self.score,
            "matched": list(self.matched),
            "pinned": self.pinned,
            "fallback": self.fallback,
            "reference_files": [str(p.relative_to(root)) for p in self.reference_files()],
        }

    def prompt_block(self) -> str:
        """The archetype as a generation prompt quotes it: title, blueprint and reference file list."""
        files = ", ".join(p.name for p in self.reference_files())
        return (
            f"## Archetype {self.blueprint.number}: {self.blueprint.title}\n{self.blueprint.blueprint}\n"
            f"Reference implementation: envcraft/archetypes/{self.name}/ ({files})"
        )


def score_all(text: str) -> list[Retrieved]:
    """Every archetype scored against ``text``, best first (ties: the paper's order)."""
    have = terms(text)
    out = []
    for bp in blueprints():
        matched = tuple(sorted({k for k in bp.keywords if terms(k) and terms(k) <= have}))
        out.append(Retrieved(bp, len(matched), matched))
    return sorted(out, key=lambda r: (-r.score, r.blueprint.number))


def retrieve(
    spec: ESpec | str,
    tools: TSpec | None = None,
    scenario: ScenarioSpec | None = None,
    *,
    k: int = TOP_K,
    pinned: Iterable[str] = (),
) -> list[Retrieved]:
    """Up to ``k`` archetypes for a specification (or any text): pinned ones first, then by score."""
    text = spec if isinstance(spec, str) else spec_text(spec, tools, scenario)
    pins = list(dict.fromkeys([*pinned, *(scenario.archetypes if scenario is not None else ())]))
    scored = score_all(text)
    by_name = {r.name: r for r in scored}
    out = [
        Retrieved(blueprint(n), by_name[n].score, by_name[n].matched, pinned=True)
        for n in pins
        if n in by_name
    ]
    if len(out) < len(pins):
        blueprint(next(n for n in pins if n not in by_name))  # raises: unknown archetype
    out += [r for r in scored if r.score > 0 and r.name not in pins]
    if not out:
        return [Retrieved(blueprint(FALLBACK), 0, (), fallback=True)]
    return out[:k]


def prompt_section(retrieved: list[Retrieved]) -> str:
    """The interaction-archetype part (P_proto) of a generation prompt."""
    return "\n\n".join(r.prompt_block() for r in retrieved)
