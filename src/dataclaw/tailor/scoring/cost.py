"""The amortised cost model of the DataClaw0 paper (Appendix F, Eq. 18; Tables 7–8; Fig. 14).

Distilling a tailoring model costs a one-off

    C_fixed = N_train · c_teacher · calls_per_retained + (T_sft + T_grpo) · r_gpu

(teacher calls for the SFT corpus + training compute), after which each sample costs the local marginal
``r_gpu / throughput``. Against an API that charges ``p`` per sample the investment is recovered after

    n* = C_fixed / (p − marginal)

samples, and never when ``marginal ≥ p``. Every quantity is configuration, not code: the paper's values
are ``data/cost_paper.yaml`` and a user file overrides any subset of them (``--config``); a run's manifest
can supply measured tokens per call and the validation yield instead of the paper's assumptions.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from dataclaw.core.errors import ConfigError

PAPER_CONFIG = Path(__file__).parents[1] / "data" / "cost_paper.yaml"

Tier = Literal["list", "batch"]


class ApiPrice(BaseModel):
    """A hosted annotator's list prices (USD per million tokens) and its batch-tier factor."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    batch_factor: float = Field(default=0.5, gt=0, le=1)

    def per_call(self, input_tokens: float, output_tokens: float, tier: Tier = "list") -> float:
        """USD for one call of the given size."""
        base = (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6
        return base * (self.batch_factor if tier == "batch" else 1.0)


class Tokens(BaseModel):
    input_per_call: float = Field(gt=0)
    output_per_call: float = Field(ge=0)


class Corpus(BaseModel):
    retained_examples: float = Field(ge=0, description="examples kept in the distilled SFT corpus")
    calls_per_retained: float = Field(ge=1, description="teacher calls per retained example (1 / yield)")


class Backbone(BaseModel):
    sft_gpu_hours: float = Field(ge=0)
    grpo_gpu_hours: float = Field(ge=0)
    throughput_per_gpu_hour: float = Field(gt=0, description="samples per GPU-hour, batched decoding")


class Scenario(BaseModel):
    """One row of the sensitivity grid: overrides of the headline assumptions."""

    name: str
    gpu_rate_per_hour: float | None = Field(default=None, ge=0)
    api_tier: Tier = "list"
    throughput_factor: float = Field(default=1.0, gt=0)


class PlotSpec(BaseModel):
    max_samples: int = Field(default=500_000, gt=0)


class CostConfig(BaseModel):
    """Everything Eq. 18 depends on (Table 7) plus the sensitivity grid (Table 8)."""

    apis: dict[str, ApiPrice] = Field(min_length=1)
    teacher: str
    compare: str
    tokens: Tokens
    corpus: Corpus
    gpu_rate_per_hour: float = Field(ge=0)
    backbones: dict[str, Backbone] = Field(min_length=1)
    sensitivity: list[Scenario] = Field(default_factory=list)
    plot: PlotSpec = Field(default_factory=PlotSpec)
    source: str = Field(default="paper", description="where the numbers came from")

    model_config = {"extra": "forbid"}

    @model_validator(mode="after")
    def _names(self) -> CostConfig:
        for role in ("teacher", "compare"):
            name = getattr(self, role)
            if name not in self.apis:
                raise ValueError(f"{role} '{name}' is not one of apis ({', '.join(self.apis)})")
        return self


# ------------------------------------------------------------------------------------------------
# loading


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``; mappings merge key by key, anything else (lists too) replaces."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _validate(data: dict[str, Any], where: str) -> CostConfig:
    try:
        return CostConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "file"
        msg = err["msg"].removeprefix("Value error, ")
        raise ConfigError(f"cost config {where}: {field}: {msg}") from None


def load_config(path: str | Path | None = None) -> CostConfig:
    """The paper's configuration, with ``path`` (YAML or JSON, any subset of the keys) on top."""
    base = yaml.safe_load(PAPER_CONFIG.read_text(encoding="utf-8"))
    if path is None:
        return _validate(base, "(built-in paper defaults)")
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"cost config {path} does not exist")
    try:
        user = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"cost config {path} is not valid YAML: {exc}") from None
    if user is None:
        user = {}
    if not isinstance(user, dict):
        raise ConfigError(f"cost config {path} must hold a mapping (apis, tokens, corpus, backbones, …)")
    return _validate({**_merge(base, user), "source": str(path)}, str(path))


def from_run(config: CostConfig, run_dir: str | Path) -> tuple[CostConfig, dict[str, Any]]:
    """``config`` with tokens per call and calls per retained example measured in a Tailor run.

    Tokens per call are the run's prompt / completion tokens over its model calls (``manifest.json``,
    ``models.usage.total``); calls per retained example are those calls over the run's samples."""
    run = Path(run_dir)
    path = run / "manifest.json"
    if not path.is_file():
        raise ConfigError(f"--from-run {run}: no manifest.json (not a run directory)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"--from-run {run}: manifest.json is not JSON ({exc})") from None
    total = ((manifest.get("models") or {}).get("usage") or {}).get("total") or {}
    calls = int(total.get("calls") or 0)
    if calls <= 0:
        raise ConfigError(f"--from-run {run}: the manifest records no model calls (was it a `tailor run`?)")
    samples = int((manifest.get("counts") or {}).get("samples") or 0)
    if samples <= 0:
        raise ConfigError(f"--from-run {run}: the run kept no samples, so its validation yield is 0")
    measured = {
        "calls": calls,
        "samples": samples,
        "input_per_call": total.get("prompt_tokens", 0) / calls,
        "output_per_call": total.get("completion_tokens", 0) / calls,
        "calls_per_retained": max(1.0, calls / samples),
    }
    data = config.model_dump()
    data["tokens"] = {
        "input_per_call": measured["input_per_call"],
        "output_per_call": measured["output_per_call"],
    }
    data["corpus"]["calls_per_retained"] = measured["calls_per_retained"]
    data["source"] = f"{config.source} + run {run}"
    return _validate(data, f"from run {run}"), measured


# ------------------------------------------------------------------------------------------------
# the model


class BackboneCost(BaseModel):
    """Eq. 18 for one backbone under one scenario."""

    backbone: str
    teacher_cost: float
    training_cost: float
    fixed_cost: float
    marginal_cost: float
    api_price: dict[str, float] = Field(description="per-sample price of each API under the scenario's tier")
    break_even: dict[str, float | None] = Field(description="n* against each API; None = never")


def api_price(config: CostConfig, api: str, tier: Tier = "list") -> float:
    """One sample's price from ``api`` (one tailoring call)."""
    t = config.tokens
    return config.apis[api].per_call(t.input_per_call, t.output_per_call, tier)


def break_even(fixed: float, marginal: float, price: float) -> float | None:
    """Samples after which self-hosting is cheaper; None when the marginal cost is not below the price."""
    if marginal >= price:
        return None
    return fixed / (price - marginal)


def backbone_cost(config: CostConfig, name: str, scenario: Scenario | None = None) -> BackboneCost:
    """One-off, marginal and break-even figures of backbone ``name`` (headline when no ``scenario``)."""
    sc = scenario or Scenario(name="headline")
    bb = config.backbones[name]
    rate = config.gpu_rate_per_hour if sc.gpu_rate_per_hour is None else sc.gpu_rate_per_hour
    teacher = config.corpus.retained_examples * config.corpus.calls_per_retained
    teacher_cost = teacher * api_price(config, config.teacher, sc.api_tier)
    training = (bb.sft_gpu_hours + bb.grpo_gpu_hours) * rate
    fixed = teacher_cost + training
    marginal = rate / (bb.throughput_per_gpu_hour * sc.throughput_factor)
    prices = {api: api_price(config, api, sc.api_tier) for api in config.apis}
    return BackboneCost(
        backbone=name,
        teacher_cost=teacher_cost,
        training_cost=training,
        fixed_cost=fixed,
        marginal_cost=marginal,
        api_price=prices,
        break_even={api: break_even(fixed, marginal, p) for api, p in prices.items()},
    )


class SensitivityRow(BaseModel):
    name: str
    gpu_rate_per_hour: float
    api_tier: Tier
    throughput_factor: float
    break_even: dict[str, float | None] = Field(description="backbone → n* against config.compare")


def sensitivity(config: CostConfig) -> list[SensitivityRow]:
    """Table 8: n* against ``config.compare`` for every backbone under every scenario."""
    rows = []
    for sc in config.sensitivity:
        costs = {b: backbone_cost(config, b, sc) for b in config.backbones}
        rows.append(
            SensitivityRow(
                name=sc.name,
                gpu_rate_per_hour=config.gpu_rate_per_hour
                if sc.gpu_rate_per_hour is None
                else sc.gpu_rate_per_hour,
                api_tier=sc.api_tier,
                throughput_factor=sc.throughput_factor,
                break_even={b: c.break_even[config.compare] for b, c in costs.items()},
            )
        )
    return rows


def report(config: CostConfig) -> dict[str, Any]:
    """Everything ``tailor cost`` prints: inputs, per-backbone costs, the sensitivity grid."""
    return {
        "source": config.source,
        "config": config.model_dump(exclude={"source"}),
        "api_price": {api: api_price(config, api) for api in config.apis},
        "backbones": {b: backbone_cost(config, b).model_dump() for b in config.backbones},
        "sensitivity": [r.model_dump() for r in sensitivity(config)],
    }


@dataclass
class CostRun:
    """The config a cost report was made from and the report (``measured``: what a run supplied, or None;
    ``plot``: the plot's path when one was drawn)."""

    config: CostConfig
    report: dict[str, Any]


def run_cost(
    config: str | Path | None = None,
    *,
    run_dir: str | Path | None = None,
    plot_path: str | Path | None = None,
    out: str | Path | None = None,
) -> CostRun:
    """Everything ``tailor cost`` does: the ``config`` file over the paper's values (:func:`load_config`),
    the measured tokens and yield of the run ``run_dir`` over those (:func:`from_run`), the report, the
    Fig. 14 plot to ``plot_path`` and the report as JSON to ``out`` (each when given)."""
    cfg = load_config(config)
    measured: dict[str, Any] | None = None
    if run_dir is not None:
        cfg, measured = from_run(cfg, run_dir)
    out_report = report(cfg)
    out_report["measured"] = measured
    if plot_path is not None:
        out_report["plot"] = str(plot(cfg, plot_path))
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(out_report, indent=1) + "\n", encoding="utf-8")
    return CostRun(cfg, out_report)


def fmt_samples(n: float | None) -> str:
    """n* as the paper writes it: ``80K``, ``1.2M``, ``never``."""
    if n is None:
        return "never"
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    if n >= 1e3:
        return f"{round(n / 1e3):.0f}K"
    return f"{math.ceil(n)}"


# ------------------------------------------------------------------------------------------------
# the plot (Fig. 14)


def plot(config: CostConfig, out: str | Path) -> Path:
    """Fig. 14: cumulative cost of each backbone and each API against samples produced, n* marked; and
    n* per sensitivity scenario. Written as PNG (or any format matplotlib infers from ``out``)."""
    from dataclaw.core.errors import require

    mpl = require("matplotlib", "the cost plot", "media")
    mpl.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    n = np.linspace(0, config.plot.max_samples, 400)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    for api in config.apis:
        left.plot(
            n,
            n * api_price(config, api),
            linestyle="--",
            label=f"{api} API (${api_price(config, api):.4f}/sample)",
        )
    for b in config.backbones:
        c = backbone_cost(config, b)
        (line,) = left.plot(n, c.fixed_cost + n * c.marginal_cost, label=f"{b} self-hosted")
        for api, ns in c.break_even.items():
            if ns is not None and ns <= config.plot.max_samples:
                y = c.fixed_cost + ns * c.marginal_cost
                left.plot([ns], [y], "o", color=line.get_color())
                left.annotate(
                    f"{fmt_samples(ns)} vs {api}",
                    (ns, y),
                    textcoords="offset points",
                    xytext=(4, -12),
                    fontsize=8,
                )
    left.set_xlabel("samples produced")
    left.set_ylabel("cumulative cost (USD)")
    left.set_title("Cost against volume (Eq. 18)")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)

    rows = sensitivity(config)
    width = 0.8 / max(1, len(config.backbones))
    cap = config.plot.max_samples
    for k, b in enumerate(config.backbones):
        vals = [r.break_even[b] for r in rows]
        xs = [i + k * width for i in range(len(rows))]
        bars = right.bar(xs, [cap if v is None or v > cap else v for v in vals], width, label=b)
        for bar, v in zip(bars, vals, strict=True):
            if v is None:
                bar.set_hatch("//")
                bar.set_alpha(0.35)
            right.annotate(
                fmt_samples(v),
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                fontsize=7,
                xytext=(0, 2),
                textcoords="offset points",
            )
    right.set_xticks([i + width * (len(config.backbones) - 1) / 2 for i in range(len(rows))])
    right.set_xticklabels([r.name for r in rows], rotation=30, ha="right", fontsize=7)
    right.set_ylabel(f"break-even n* vs {config.compare}")
    right.set_title("Sensitivity (Table 8); hatched = never")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
