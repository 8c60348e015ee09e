"""The DataClaw0-val metric (paper §3.5, A.4.4):

    S_total    = G_json · (λ1·S_field + λ2·S_semantic + λ3·S_traj) / (λ1 + λ2 + λ3)
    S_field    = 0.7·C_field + 0.3·(1 − R_field)
    S_semantic = (α·sim_question + β·sim_answer + γ·sim_cot) / (α + β + γ)
    S_traj     = exp(−d_shape / τ_s)

Similarities are cosines of all-MiniLM-L6-v2 embeddings clipped to [0, 1]. A part the intent does not
have (no CoT field, no trajectory) drops out together with its weight, which is why the sum is divided by
the weights present (with every part present and the λs summing to 1 it is the paper's formula). An
answer that is not a JSON object scores 0 on every part. Table 1's columns are the ungated part means per
domain (the Fuzzy subset apart) and their Overall is the mean of the columns, as the paper's numbers are.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.scoring.bench import fields as F
from dataclaw.tailor.scoring.bench.config import MetricConfig, RoleBook, Roles
from dataclaw.tailor.scoring.bench.data import FUZZY, Prediction, Reference
from dataclaw.tailor.scoring.bench.embeddings import CachedEmbedder
from dataclaw.tailor.scoring.bench.trajectory import shape_distance, trajectories

ROLES = ("question", "answer", "cot")
# Table 1's columns: domain → heading, in the paper's order.
COLUMNS: dict[str, str] = {
    "gui": "GUI",
    "embodied": "Embodied",
    "aigc_world": "AIGC",
    "daily_life": "Daily",
    "education": "Education",
    FUZZY: "Fuzzy",
}
METRICS = {"field": "Field", "semantic": "Semantic", "traj": "Sequence"}


class SampleScore(BaseModel):
    """One reference's score with every component, for the per-sample breakdown."""

    ref_id: str
    pred_id: str | None
    intent: str
    subset: str
    gate: float
    c_field: float
    r_field: float
    field: float
    sims: dict[str, float | None] = Field(
        description="question / answer / cot similarity (None: no such text)"
    )
    semantic: float | None
    d_shape: float | None
    traj: float | None
    total: float
    error: str | None = Field(default=None, description="not JSON, schema violation, or no prediction")


def texts_of(output: Any, paths: list[str]) -> str:
    """The text of one role: the strings (and numbers) at ``paths``, one a line."""
    from dataclaw.tailor.scoring.bench.trajectory import values_at

    parts: list[str] = []
    for path in paths:
        for v in values_at(output, path):
            for x in v if isinstance(v, list) else [v]:
                if isinstance(x, str) and x.strip():
                    parts.append(x.strip())
                elif isinstance(x, int | float) and not isinstance(x, bool):
                    parts.append(str(x))
    return "\n".join(parts)


def _weighted(parts: dict[str, float | None], weights: dict[str, float]) -> float | None:
    num = den = 0.0
    for key, value in parts.items():
        if value is not None and weights[key] > 0:
            num += weights[key] * value
            den += weights[key]
    return num / den if den > 0 else None


class Scorer:
    """Scores (reference, prediction) pairs; embeddings for all of them in one batched pass."""

    def __init__(
        self,
        catalog: IntentCatalog,
        config: MetricConfig | None = None,
        embedder: CachedEmbedder | None = None,
        roles: RoleBook | None = None,
    ) -> None:
        self.catalog = catalog
        self.config = config or MetricConfig()
        self.embedder = embedder
        self.roles = roles or RoleBook()

    def _roles(self, intent_id: str) -> Roles:
        return self.roles.get(intent_id, self.catalog.get(intent_id).output_schema)

    def score(
        self,
        pairs: list[tuple[Reference, Prediction | None]],
        progress: Callable[[int, int], None] | None = None,
    ) -> list[SampleScore]:
        """Every pair's :class:`SampleScore` (unanswered references per ``config.missing``)."""
        cfg = self.config
        staged: list[tuple[Reference, Prediction | None, dict[str, Any], dict[str, tuple[str, str]]]] = []
        wanted: list[str] = []
        for ref, pred in pairs:
            if pred is None and cfg.missing == "skip":
                continue
            base, texts = self._structural(ref, pred)
            staged.append((ref, pred, base, texts))
            for p_text, r_text in texts.values():
                if p_text and p_text != r_text:  # else the similarity is 0 or 1 without embeddings
                    wanted.extend((p_text, r_text))
        vecs: dict[str, np.ndarray] = {}
        if any(wanted):
            if self.embedder is None:
                self.embedder = CachedEmbedder()
            vecs = self.embedder.vectors(wanted, progress)
        sem_w = cfg.semantic.model_dump()
        lam = cfg.lambdas.model_dump()
        out: list[SampleScore] = []
        for ref, pred, base, texts in staged:
            sims: dict[str, float | None] = {}
            for role in ROLES:
                if role not in texts:
                    sims[role] = None
                    continue
                p_text, r_text = texts[role]
                if not p_text or p_text == r_text:
                    sims[role] = 1.0 if p_text else 0.0
                    continue
                cos = float(np.dot(vecs[p_text], vecs[r_text]))
                sims[role] = min(1.0, max(0.0, cos))
            semantic = _weighted(sims, sem_w)
            parts = {"field": base["field"], "semantic": semantic, "traj": base["traj"]}
            combined = _weighted(parts, lam) or 0.0
            out.append(
                SampleScore(
                    ref_id=ref.id,
                    pred_id=pred.id if pred else None,
                    intent=ref.intent,
                    subset=ref.subset,
                    gate=base["gate"],
                    c_field=base["c_field"],
                    r_field=base["r_field"],
                    field=base["field"],
                    sims=sims,
                    semantic=semantic,
                    d_shape=base["d_shape"],
                    traj=base["traj"],
                    total=base["gate"] * combined,
                    error=base["error"],
                )
            )
        return out

    def _structural(
        self, ref: Reference, pred: Prediction | None
    ) -> tuple[dict[str, Any], dict[str, tuple[str, str]]]:
        """Gate, field and trajectory parts of one pair, and the (pred, ref) texts of each semantic role
        the reference has."""
        cfg = self.config
        schema = self.catalog.get(ref.intent).output_schema
        roles = self._roles(ref.intent)
        output = pred.output if pred is not None else None
        error = "no prediction" if pred is None else pred.error
        parsed = isinstance(output, dict)
        texts: dict[str, tuple[str, str]] = {}
        for role in ROLES:
            paths = getattr(roles, role)
            r_text = texts_of(ref.output, paths) if paths else ""
            if r_text:
                texts[role] = (texts_of(output, paths) if parsed else "", r_text)
        d_shape: float | None = None
        traj: float | None = None
        if roles.trajectory is not None:
            p_seq, r_seq = trajectories(
                roles.trajectory, output if parsed else {}, ref.output, ref.frame_range
            )
            if r_seq:
                if p_seq:
                    d_shape = shape_distance(p_seq, r_seq, cfg.k_points)
                    traj = float(np.exp(-d_shape / cfg.tau_s))
                else:
                    traj = 0.0
        if not parsed:
            c = r = 0.0
            field = 0.0
            gate = 0.0
        else:
            c = F.coverage(output, ref.output, schema)
            r = F.redundancy(output, schema)
            field = cfg.coverage_weight * c + (1 - cfg.coverage_weight) * (1 - r)
            gate = F.gate(output, schema, cfg.gate)
            if gate == 0.0 and error is None:
                error = f"schema: {F.schema_error(output, schema)}"
        if pred is not None and pred.intent != ref.intent and error is None:
            error = f"answered as intent {pred.intent}"
        base = {
            "gate": gate, "c_field": c, "r_field": r, "field": field, "d_shape": d_shape, "traj": traj,
            "error": error, "parsed": parsed,
        }  # fmt: skip
        return base, texts


# ------------------------------------------------------------------------------------------------
# Table 1


def table(scores: list[SampleScore]) -> dict[str, dict[str, float | None]]:
    """Table 1's layout: metric (Field / Semantic / Sequence, plus our Total = S_total) → column →
    percentage (None: no sample). A column is the mean over its samples (a part a sample lacks is left
    out of that part's mean); Overall is the mean of the columns that have samples."""
    by_col: dict[str, list[SampleScore]] = defaultdict(list)
    for s in scores:
        by_col[COLUMNS.get(s.subset, s.subset)].append(s)
    heads = [*COLUMNS.values(), *sorted(set(by_col) - set(COLUMNS.values()))]
    out: dict[str, dict[str, float | None]] = {}
    for key, name in [*METRICS.items(), ("total", "Total")]:
        row: dict[str, float | None] = {}
        for head in heads:
            vals = [getattr(s, key) for s in by_col[head] if getattr(s, key) is not None]
            row[head] = 100 * float(np.mean(vals)) if vals else None
        present = [v for v in row.values() if v is not None]
        row["Overall"] = float(np.mean(present)) if present else None
        out[name] = row
    return out
