"""Weights of the DataClaw0-val metric and which output fields play which role (``roles.yaml``).

The paper (A.4.4) fixes only the 0.7 / 0.3 split of S_field and K = 50; the λs, α/β/γ and τ_s are left
open. Our defaults, argued in docs/scoring.md: λ = 1/3 each (so the ungated total is the unweighted mean
of the three columns, and the gate alone makes up the gap §4.4 describes), α = β = γ = 1, τ_s = 0.2
(a trajectory off by a fifth of the span scores e⁻¹ ≈ 0.37; a reversed linear one ≈ 0.08).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.scoring.bench.trajectory import K_POINTS, TrajectorySpec

ROLES_FILE = Path(__file__).with_name("roles.yaml")


class Lambdas(BaseModel):
    """λ1 (field), λ2 (semantic), λ3 (trajectory) of S_total."""

    field: float = Field(default=1 / 3, ge=0)
    semantic: float = Field(default=1 / 3, ge=0)
    traj: float = Field(default=1 / 3, ge=0)


class SemanticWeights(BaseModel):
    """α (question), β (answer), γ (chain of thought) of S_semantic."""

    question: float = Field(default=1.0, ge=0)
    answer: float = Field(default=1.0, ge=0)
    cot: float = Field(default=1.0, ge=0)


class MetricConfig(BaseModel):
    """Every weight of S_total, with the defaults docs/scoring.md argues for."""

    lambdas: Lambdas = Field(default_factory=Lambdas)
    semantic: SemanticWeights = Field(default_factory=SemanticWeights)
    coverage_weight: float = Field(default=0.7, ge=0, le=1, description="S_field = w·C + (1 − w)·(1 − R)")
    tau_s: float = Field(default=0.2, gt=0)
    k_points: int = Field(default=K_POINTS, ge=2, le=10_000)
    gate: Literal["schema", "json"] = "schema"
    missing: Literal["zero", "skip"] = Field(
        default="zero", description="a reference no prediction answers: scored 0, or left out"
    )

    model_config = {"extra": "forbid"}


def load_metric_config(path: str | Path | None) -> MetricConfig:
    """Defaults, or a YAML/JSON file with any subset of the fields."""
    if path is None:
        return MetricConfig()
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"metric config {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"metric config {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"metric config {path} must hold a mapping (lambdas, semantic, tau_s, …)")
    try:
        return MetricConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "file"
        raise ConfigError(f"metric config {path}: {where}: {err['msg']}") from None


# ------------------------------------------------------------------------------------------------
# roles


class Roles(BaseModel):
    """Which fields of one intent's output are its question, answer, CoT and trajectory."""

    question: list[str] = Field(default_factory=list)
    answer: list[str] = Field(default_factory=list)
    cot: list[str] = Field(default_factory=list)
    trajectory: TrajectorySpec | None = None

    model_config = {"extra": "forbid"}


class InferRule(BaseModel):
    question: list[str]
    answer: list[str]
    cot: list[str]
    frame_words: list[str]
    label_words: list[str]


class RoleBook:
    """Roles by intent id: the listed ones from ``roles.yaml``, the rest inferred from the schema."""

    def __init__(self, path: Path = ROLES_FILE) -> None:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        try:
            self.listed = {k: Roles.model_validate(v) for k, v in (data.get("intents") or {}).items()}
            self.rule = InferRule.model_validate(data["infer"])
        except (ValidationError, KeyError) as exc:
            raise ConfigError(f"roles file {path} is malformed: {exc}") from None
        self._inferred: dict[str, Roles] = {}

    def get(self, intent_id: str, schema: dict[str, Any]) -> Roles:
        if intent_id in self.listed:
            return self.listed[intent_id]
        if intent_id not in self._inferred:
            self._inferred[intent_id] = self.infer(schema)
        return self._inferred[intent_id]

    def infer(self, schema: dict[str, Any]) -> Roles:
        """Roles of an unlisted intent from its schema's field names (see ``roles.yaml``, ``infer``)."""
        props: dict[str, Any] = schema.get("properties", {})
        text = {k for k, v in props.items() if v.get("type") == "string"}
        pick = lambda names: [n for n in names if n in text][:1]  # noqa: E731
        frames: list[str] = []
        labels: list[str] = []
        words = tuple(self.rule.frame_words)
        for key, sub in props.items():
            t, items = sub.get("type"), sub.get("items") or {}
            if key in self.rule.label_words and t == "array" and items.get("type") == "string":
                labels.append(key)
            elif t == "integer" and any(w in key for w in words):
                frames.append(key)
            elif t == "array" and items.get("type") == "integer" and any(w in key for w in words):
                frames.append(f"{key}[]")
            elif t == "object":
                for k2, s2 in (sub.get("properties") or {}).items():
                    if s2.get("type") == "integer" and any(w in k2 for w in words):
                        frames.append(f"{key}.{k2}")
            elif t == "array" and items.get("type") == "object":
                for k2, s2 in (items.get("properties") or {}).items():
                    if s2.get("type") == "integer" and any(w in k2 for w in words):
                        frames.append(f"{key}[].{k2}")
        traj = None
        if labels:
            traj = TrajectorySpec(kind="labels", paths=labels[:1])
        elif frames:
            traj = TrajectorySpec(kind="frames", paths=frames)
        return Roles(
            question=pick(self.rule.question),
            answer=pick(self.rule.answer),
            cot=pick(self.rule.cot),
            trajectory=traj,
        )
