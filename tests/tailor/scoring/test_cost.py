"""The Appendix F cost model: the packaged defaults reproduce every number of Table 7 / Table 8 and the
§1 / §F text; bad configs and runs are one clear error; the plot and --from-run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.core.errors import ConfigError
from dataclaw.tailor.scoring import cost as C

GEMINI, KIMI = "gemini-3.1-pro", "kimi-k2.6"


@pytest.fixture(scope="module")
def paper() -> C.CostConfig:
    return C.load_config()


def test_per_call_prices(paper: C.CostConfig) -> None:
    assert C.api_price(paper, GEMINI) == pytest.approx(0.0384)  # "$0.038" (§1, §F), 12K in + 1.2K out
    assert C.api_price(paper, KIMI) == pytest.approx(0.0162)
    assert C.api_price(paper, GEMINI, "batch") == pytest.approx(0.0192)


def test_headline_figures_of_table_7_and_the_text(paper: C.CostConfig) -> None:
    b9, b27 = C.backbone_cost(paper, "9B"), C.backbone_cost(paper, "27B")
    # one-off: $2,357 (the paper rounds to $2,360) and $3,739 ($3,740)
    assert b9.fixed_cost == pytest.approx(2356.8) and round(b9.fixed_cost, -1) == 2360
    assert b27.fixed_cost == pytest.approx(3739.2) and round(b27.fixed_cost, -1) == 3740
    assert b9.teacher_cost == pytest.approx(34_700 * 1.25 * 0.0384)
    # marginal: $0.009 and $0.027 per sample
    assert round(b9.marginal_cost, 3) == 0.009 and round(b27.marginal_cost, 3) == 0.027
    # break-even: ~80K and ~324K against Gemini, 327K and never against Kimi
    assert C.fmt_samples(b9.break_even[GEMINI]) == "80K"
    assert C.fmt_samples(b27.break_even[GEMINI]) == "324K"
    assert C.fmt_samples(b9.break_even[KIMI]) == "327K"
    assert b27.break_even[KIMI] is None and C.fmt_samples(None) == "never"
    assert b9.break_even[GEMINI] == pytest.approx(2356.8 / (0.0384 - 0.009))


def test_every_row_of_table_8(paper: C.CostConfig) -> None:
    got = {
        r.name: (C.fmt_samples(r.break_even["9B"]), C.fmt_samples(r.break_even["27B"]))
        for r in C.sensitivity(paper)
    }
    assert got == {
        "Headline (Table 7)": ("80K", "324K"),
        "Marketplace accelerators": ("54K", "84K"),
        "Hyperscaler accelerators": ("277K", "never"),
        "Serving throughput 2x worse": ("116K", "never"),
        "Batch-tier API pricing": ("149K", "never"),
        "Batch tier + hyperscaler": ("never", "never"),
        "Batch tier + hyperscaler + low throughput": ("never", "never"),
    }


def test_user_config_overrides_a_subset(tmp_path: Path) -> None:
    path = tmp_path / "cost.yaml"
    path.write_text("gpu_rate_per_hour: 0.65\nbackbones: {9B: {throughput_per_gpu_hour: 400}}\n")
    cfg = C.load_config(path)
    assert cfg.backbones["9B"].sft_gpu_hours == 96  # untouched keys keep the paper's value
    b9 = C.backbone_cost(cfg, "9B")
    assert b9.marginal_cost == pytest.approx(0.65 / 400)
    assert b9.fixed_cost == pytest.approx(34_700 * 1.25 * 0.0384 + 384 * 0.65)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("gpu_rate_per_hour: -1\n", "gpu_rate_per_hour"),
        ("backbones: {9B: {throughput_per_gpu_hour: 0}}\n", "backbones.9B.throughput_per_gpu_hour"),
        ("apis: {kimi-k2.6: {input_per_mtok: -0.5}}\n", "apis.kimi-k2.6.input_per_mtok"),
        ("teacher: claude\n", "teacher 'claude' is not one of apis"),
        ("corpus: {calls_per_retained: 0.5}\n", "corpus.calls_per_retained"),
        ("gpu_rate: 2\n", "gpu_rate"),
        ("- just a list\n", "must hold a mapping"),
    ],
)
def test_bad_config_is_one_clear_error(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "cost.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        C.load_config(path)
    assert str(path) in str(err.value) and where in str(err.value)


def write_run(root: Path, calls: int, prompt: int, completion: int, samples: int) -> Path:
    """A run directory whose manifest has the keys `tailor run` writes (models.usage.total, counts)."""
    root.mkdir(parents=True)
    total = {"calls": calls, "cache_hits": 0, "failed": 0, "prompt_tokens": prompt}
    total |= {"completion_tokens": completion, "cost_usd": 0.0, "priced": False}
    manifest = {
        "counts": {"responses": calls, "samples": samples},
        "models": {"usage": {"by_model": {}, "total": total}},
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_from_run_uses_measured_tokens_and_yield(tmp_path: Path, paper: C.CostConfig) -> None:
    run = write_run(tmp_path / "run", calls=40, prompt=40 * 9000, completion=40 * 900, samples=25)
    cfg, measured = C.from_run(paper, run)
    assert measured["input_per_call"] == 9000 and measured["output_per_call"] == 900
    assert cfg.corpus.calls_per_retained == pytest.approx(1.6)
    price = (9000 * 2 + 900 * 12) / 1e6
    assert C.api_price(cfg, GEMINI) == pytest.approx(price)
    assert C.backbone_cost(cfg, "9B").fixed_cost == pytest.approx(34_700 * 1.6 * price + 384 * 1.8)
    with pytest.raises(ConfigError, match=r"no manifest\.json"):
        C.from_run(paper, tmp_path)
    empty = write_run(tmp_path / "empty", calls=3, prompt=10, completion=10, samples=0)
    with pytest.raises(ConfigError, match="kept no samples"):
        C.from_run(paper, empty)


def test_cli_tables_json_and_plot(tmp_path: Path, capsys) -> None:
    plot, out = tmp_path / "fig14.png", tmp_path / "cost.json"
    assert _run(["tailor", "cost", "--plot", str(plot), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    for needle in (
        "$2,357",
        "$3,739",
        "$0.009",
        "$0.027",
        "80K",
        "324K",
        "327K",
        "54K",
        "84K",
        "277K",
        "116K",
        "149K",
    ):
        assert needle in text
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000
    report = json.loads(out.read_text())
    assert report["backbones"]["27B"]["break_even"][KIMI] is None
    bad = tmp_path / "bad.yaml"
    bad.write_text("backbones: {27B: {throughput_per_gpu_hour: 0}}\n")
    assert _run(["tailor", "cost", "--config", str(bad), "--no-plot"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "throughput_per_gpu_hour" in err and len(err.strip().splitlines()) == 1


def test_run_cost_takes_a_run_s_measures_and_writes_the_report(tmp_path: Path, paper: C.CostConfig) -> None:
    run = write_run(tmp_path / "run", calls=40, prompt=40 * 9000, completion=40 * 900, samples=25)
    out = tmp_path / "out" / "cost.json"
    made = C.run_cost(run_dir=run, out=out)
    assert made.report["measured"]["input_per_call"] == 9000
    assert made.config.corpus.calls_per_retained == pytest.approx(1.6)
    assert "plot" not in made.report and json.loads(out.read_text()) == made.report
    plain = C.run_cost()
    assert plain.report["measured"] is None and plain.report == C.report(paper) | {"measured": None}
