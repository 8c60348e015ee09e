"""Rule-driven GRPO rewards of the DataClaw0 paper (§3.3, B.1, §4.1):

    R(Y) = λ_fmt·R_format(Y, Φ) + λ_anc·R_anchor(Y, A) + λ_eff·R_eff(Y),   λ = 0.7, 1.0, 0.3
    Â(g) = (R(g) − μ_R) / σ_R   within each group of rollouts of one prompt

* ``R_format``: +1 for an answer that parses as a JSON object valid against the intent's schema Φ;
  −0.5 for a JSON object that violates it (a structural error); −1 for text that is not JSON at all, a
  truncated answer included (the "truncation penalty"). A ``<think>…</think>`` block before the answer
  is the chain of thought, not part of the answer.
* ``R_anchor``: the trajectory-shape similarity ``exp(−d_shape/τ_s)`` of the metric (K = 50 resampling,
  :mod:`dataclaw.tailor.scoring.bench.trajectory`) between the answer's frame indices (or ordered labels) and
  the reference's, or the anchors' frame indices when ``anchors`` are given; 0 for an answer that is
  not JSON; None (no signal; TRL sums what is there) when the intent has no trajectory.
* ``R_eff``: group-relative CoT length regularisation. The top 50% rollouts of a group by R_format +
  R_anchor (weighted) set the reference band [min, max] of their CoT lengths, widened by ``tolerance``;
  each other rollout in the band gets ``+bonus``, one outside it ``−penalty·min(1, relative distance)``;
  the reference rollouts themselves get 0, and an answer that is not JSON no bonus. CoT length is
  counted in whitespace-separated words of the think block plus the answer's reasoning field.

Exposed two ways. TRL ``GRPOTrainer(reward_funcs=REWARD_FUNCS, args=GRPOConfig(reward_weights=
REWARD_WEIGHTS))``: each function takes ``prompts, completions, completion_ids`` and the dataset columns
as keyword arguments (``intent``, ``reference``; optional ``anchors``, ``schema``, ``frame_range``), one
value per completion, the way ``GRPOTrainer._calculate_rewards`` calls them; a group is the completions
of one prompt. VERL ``compute_score(data_source, solution_str, ground_truth, extra_info)``: per sample,
so without R_eff (which needs the group).
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel, Field

from dataclaw.tailor.scoring.bench.config import RoleBook, Roles
from dataclaw.tailor.scoring.bench.data import parse_answer
from dataclaw.tailor.scoring.bench.fastschema import validity
from dataclaw.tailor.scoring.bench.metric import texts_of
from dataclaw.tailor.scoring.bench.trajectory import (
    TrajectorySpec,
    frame_values,
    normalise_frames,
    shape_distance,
    trajectories,
)


class RewardConfig(BaseModel):
    """Weights and shapes of the rewards; defaults are the paper's (§4.1) and ours (docs/scoring.md)."""

    w_format: float = 0.7
    w_anchor: float = 1.0
    w_eff: float = 0.3
    valid: float = Field(default=1.0, description="R_format of a schema-valid answer")
    schema_penalty: float = Field(default=-0.5, description="R_format of JSON that violates the schema")
    truncation_penalty: float = Field(default=-1.0, description="R_format of text that is not JSON")
    tau_s: float = Field(default=0.2, gt=0)
    k_points: int = Field(default=50, ge=2)
    top_fraction: float = Field(default=0.5, gt=0, le=1)
    tolerance: float = Field(default=0.25, ge=0, description="band widened by this share on each side")
    bonus: float = Field(default=0.1, ge=0)
    penalty: float = Field(default=1.0, ge=0)


DEFAULT = RewardConfig()
REWARD_WEIGHTS = [DEFAULT.w_format, DEFAULT.w_anchor, DEFAULT.w_eff]


# ------------------------------------------------------------------------------------------------
# parsing a completion


def completion_text(completion: Any) -> str:
    """The text of one completion: a string, or TRL's conversational form (a list of messages, the
    assistant's content a string or a list of ``{"type": "text", "text": …}`` blocks)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        parts = []
        for msg in completion:
            content = msg.get("content") if isinstance(msg, dict) else msg
            if isinstance(content, list):
                parts.extend(
                    b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
                )
            elif isinstance(content, str):
                parts.append(content)
        return "".join(parts)
    return "" if completion is None else str(completion)


def split_think(text: str) -> tuple[str, str]:
    """(chain of thought, answer): the ``<think>`` block, if any, and what follows it."""
    if "</think>" in text:
        head, _, tail = text.rpartition("</think>")
        return head.replace("<think>", "").strip(), tail.strip()
    return "", text.strip()


class Parsed(NamedTuple):
    """A completion split into its answer (the JSON object, or None with the reason) and its CoT.

    A NamedTuple, not a pydantic model or dataclass: VERL can load this file as a module of its own
    (``custom_reward_function.path: /path/to/rewards.py``), outside ``sys.modules``, where those two
    cannot resolve postponed annotations."""

    output: Any = None
    think: str = ""
    error: str | None = None


def parse_completion(completion: Any) -> Parsed:
    """The answer and chain of thought of one completion (parsed once: TRL calls each reward function on
    the same completions in turn)."""
    return _parse_text(completion_text(completion))


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Parsed:
    think, answer = split_think(text)
    output, error = parse_answer(answer) if answer else (None, "empty answer")
    return Parsed(output=output, think=think, error=error)


# ------------------------------------------------------------------------------------------------
# context: the intent's schema and roles


class _Context:
    """Schemas and roles per intent, resolved once (the catalogue is loaded on first use)."""

    def __init__(self) -> None:
        self._catalog: Any = None
        self.roles = RoleBook()
        self._validators: dict[str, Any] = {}
        self._schemas: dict[str, dict[str, Any]] = {}

    def schema(self, intent: str, schema: Any = None) -> dict[str, Any]:
        if schema is not None:
            if isinstance(schema, str):
                key = schema
                if key not in self._schemas:
                    self._schemas[key] = json.loads(schema)
                return self._schemas[key]
            return schema
        if intent not in self._schemas:
            if self._catalog is None:
                from dataclaw.tailor.intents.registry import IntentCatalog

                self._catalog = IntentCatalog.builtin()
            self._schemas[intent] = self._catalog.get(intent).output_schema
        return self._schemas[intent]

    def validator(self, intent: str, schema: Any = None) -> Any:
        """``is_valid`` of the intent's schema (or of ``schema``), compiled once per schema."""
        key = schema if isinstance(schema, str) else f"intent:{intent}" if schema is None else None
        if key is None:
            return validity(schema)
        if key not in self._validators:
            self._validators[key] = validity(self.schema(intent, schema))
        return self._validators[key]

    def role(self, intent: str, schema: Any = None) -> Roles:
        return self.roles.get(intent, self.schema(intent, schema))


_CTX: _Context | None = None


def _ctx() -> _Context:
    global _CTX
    if _CTX is None:
        _CTX = _Context()
    return _CTX


def _as_output(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


# ------------------------------------------------------------------------------------------------
# the three rewards on one sample


def format_reward(parsed: Parsed, intent: str, schema: Any = None, config: RewardConfig = DEFAULT) -> float:
    """R_format of one parsed completion."""
    if not isinstance(parsed.output, dict):
        return config.truncation_penalty
    return config.valid if _ctx().validator(intent, schema)(parsed.output) else config.schema_penalty


def anchor_reward(
    parsed: Parsed,
    intent: str,
    reference: Any = None,
    anchors: Sequence[float] | None = None,
    frame_range: Sequence[float] | None = None,
    schema: Any = None,
    config: RewardConfig = DEFAULT,
) -> float | None:
    """R_anchor of one parsed completion against the reference's trajectory, or the anchors' frames."""
    spec: TrajectorySpec | None = _ctx().role(intent, schema).trajectory
    if spec is None:
        return None
    output = parsed.output if isinstance(parsed.output, dict) else {}
    if anchors is not None and len(anchors) > 0 and spec.kind == "frames":
        pred = frame_values(output, spec.paths)
        ref = [float(a) for a in anchors]
        if pred:
            pred, ref = normalise_frames(pred, ref, frame_range)
    else:
        ref_out = _as_output(reference)
        if not isinstance(ref_out, dict):
            return None
        pred, ref = trajectories(spec, output, ref_out, frame_range)
    if not ref:
        return None
    if not pred:
        return 0.0
    return math.exp(-shape_distance(pred, ref, config.k_points) / config.tau_s)


def cot_length(parsed: Parsed, intent: str, schema: Any = None) -> int:
    """Words of the chain of thought: the think block plus the answer's CoT field(s)."""
    words = len(parsed.think.split())
    paths = _ctx().role(intent, schema).cot
    if paths and isinstance(parsed.output, dict):
        words += len(texts_of(parsed.output, paths).split())
    return words


def efficiency_rewards(
    rewards: Sequence[float],
    lengths: Sequence[float],
    config: RewardConfig = DEFAULT,
    eligible: Sequence[bool] | None = None,
) -> list[float]:
    """R_eff of one group: the top ``top_fraction`` by reward set the length band; the rest are
    rewarded inside it and penalised outside it in proportion to the relative distance. A rollout not
    ``eligible`` (its answer is not JSON) can be penalised but never gets the in-band bonus."""
    n = len(rewards)
    if n < 2:
        return [0.0] * n
    order = sorted(range(n), key=lambda i: (-rewards[i], i))
    top = order[: max(1, math.ceil(n * config.top_fraction))]
    ref = [lengths[i] for i in top]
    lo, hi = min(ref) * (1 - config.tolerance), max(ref) * (1 + config.tolerance)
    out = [0.0] * n
    top_set = set(top)
    for i in range(n):
        if i in top_set:
            continue
        length = lengths[i]
        if lo <= length <= hi:
            out[i] = config.bonus if eligible is None or eligible[i] else 0.0
        elif length > hi:
            out[i] = -config.penalty * min(1.0, (length - hi) / max(hi, 1.0))
        else:
            out[i] = -config.penalty * min(1.0, (lo - length) / max(lo, 1.0))
    return out


def group_advantages(rewards: Sequence[float]) -> list[float]:
    """Â = (R − μ) / σ within one group (σ with Bessel's correction, as TRL); all 0 when σ = 0 (up to
    float rounding: three equal rewards of 0.7 have σ ≈ 1e-16, which must not blow up into ±0.8)."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.size < 2:
        return [0.0] * int(r.size)
    sigma = float(r.std(ddof=1))
    if not np.isfinite(sigma) or sigma <= 1e-9 * max(
        1.0, float(np.abs(r).max())
    ):  # equal rewards (to rounding)
        return [0.0] * int(r.size)
    return [float(x) for x in (r - r.mean()) / sigma]


# ------------------------------------------------------------------------------------------------
# TRL reward functions


def _column(kwargs: dict[str, Any], name: str, n: int) -> list[Any]:
    value = kwargs.get(name)
    if value is None:
        return [None] * n
    if len(value) != n:
        raise ValueError(f"dataset column '{name}' has {len(value)} values for {n} completions")
    return list(value)


def _intents(kwargs: dict[str, Any], n: int) -> list[str]:
    intents = _column(kwargs, "intent", n)
    if any(not isinstance(i, str) for i in intents):
        raise ValueError("the Tailor rewards need an 'intent' column (the intent id of each example)")
    return intents


def _base(
    prompts: list[Any], completions: list[Any], kwargs: dict[str, Any], config: RewardConfig
) -> dict[str, list[Any]]:
    n = len(completions)
    intents = _intents(kwargs, n)
    refs, anchors = _column(kwargs, "reference", n), _column(kwargs, "anchors", n)
    schemas, ranges = _column(kwargs, "schema", n), _column(kwargs, "frame_range", n)
    parsed = [parse_completion(c) for c in completions]
    fmt = [format_reward(p, i, s, config) for p, i, s in zip(parsed, intents, schemas, strict=True)]
    anc = [
        anchor_reward(p, i, r, a, fr, s, config)
        for p, i, r, a, fr, s in zip(parsed, intents, refs, anchors, ranges, schemas, strict=True)
    ]
    return {"parsed": parsed, "intents": intents, "schemas": schemas, "format": fmt, "anchor": anc}


def _groups(prompts: list[Any], kwargs: dict[str, Any]) -> list[list[int]]:
    """Indices of the completions of each prompt (a ``group`` column, when given, decides instead)."""
    keys = kwargs.get("group") or [json.dumps(p, sort_keys=True, default=str) for p in prompts]
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        groups[key].append(i)
    return list(groups.values())


def _eff(
    prompts: list[Any], base: dict[str, list[Any]], kwargs: dict[str, Any], config: RewardConfig
) -> list[float]:
    scores = [
        config.w_format * f + config.w_anchor * (a or 0.0)
        for f, a in zip(base["format"], base["anchor"], strict=True)
    ]
    lengths = [
        cot_length(p, i, s) for p, i, s in zip(base["parsed"], base["intents"], base["schemas"], strict=True)
    ]
    ok = [isinstance(p.output, dict) for p in base["parsed"]]
    out = [0.0] * len(scores)
    for idx in _groups(prompts, kwargs):
        group = efficiency_rewards(
            [scores[i] for i in idx], [lengths[i] for i in idx], config, [ok[i] for i in idx]
        )
        for i, r in zip(idx, group, strict=True):
            out[i] = r
    return out


def tailor_format_reward(
    prompts: list[Any], completions: list[Any], completion_ids: Any = None, **kwargs: Any
) -> list[float]:
    """TRL reward function: R_format per completion."""
    n = len(completions)
    intents, schemas = _intents(kwargs, n), _column(kwargs, "schema", n)
    return [
        format_reward(parse_completion(c), i, s)
        for c, i, s in zip(completions, intents, schemas, strict=True)
    ]


def tailor_anchor_reward(
    prompts: list[Any], completions: list[Any], completion_ids: Any = None, **kwargs: Any
) -> list[float | None]:
    """TRL reward function: R_anchor per completion (None where the intent has no trajectory)."""
    n = len(completions)
    intents = _intents(kwargs, n)
    cols = [_column(kwargs, k, n) for k in ("reference", "anchors", "frame_range", "schema")]
    return [
        anchor_reward(parse_completion(c), i, r, a, fr, s)
        for c, i, r, a, fr, s in zip(completions, intents, *cols, strict=True)
    ]


def tailor_efficiency_reward(
    prompts: list[Any], completions: list[Any], completion_ids: Any = None, **kwargs: Any
) -> list[float]:
    """TRL reward function: R_eff per completion, relative to the other completions of its prompt."""
    return _eff(prompts, _base(prompts, completions, kwargs, DEFAULT), kwargs, DEFAULT)


def tailor_reward(
    prompts: list[Any], completions: list[Any], completion_ids: Any = None, **kwargs: Any
) -> list[float]:
    """TRL reward function: the weighted sum R(Y) in one function (use alone, weight 1)."""
    base = _base(prompts, completions, kwargs, DEFAULT)
    eff = _eff(prompts, base, kwargs, DEFAULT)
    c = DEFAULT
    return [
        c.w_format * f + c.w_anchor * (a or 0.0) + c.w_eff * e
        for f, a, e in zip(base["format"], base["anchor"], eff, strict=True)
    ]


REWARD_FUNCS = [tailor_format_reward, tailor_anchor_reward, tailor_efficiency_reward]


# ------------------------------------------------------------------------------------------------
# VERL


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """VERL custom reward: λ_fmt·R_format + λ_anc·R_anchor of one response (R_eff needs the group).

    ``ground_truth`` is the reference output (object or JSON string); ``extra_info`` carries ``intent``
    (else the last ``/`` part of ``data_source``) and optionally ``anchors``, ``frame_range``, ``schema``."""
    info = extra_info or {}
    intent = info.get("intent") or str(data_source).rsplit("/", 1)[-1]
    parsed = parse_completion(solution_str)
    schema = info.get("schema")
    fmt = format_reward(parsed, intent, schema)
    anc = anchor_reward(parsed, intent, ground_truth, info.get("anchors"), info.get("frame_range"), schema)
    score = DEFAULT.w_format * fmt + DEFAULT.w_anchor * (anc or 0.0)
    return {"score": score, "format": fmt, "anchor": anc or 0.0, "has_anchor": float(anc is not None)}
