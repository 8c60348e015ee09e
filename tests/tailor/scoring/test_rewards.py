"""GRPO rewards (paper B.1): R_format, R_anchor, R_eff, group advantages, and the TRL / VERL calling
conventions (TRL's own ``_calculate_rewards`` in .venv-train, VERL's custom-reward loader in .venv-verl)."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dataclaw.tailor.scoring import rewards as R

REPO = Path(__file__).resolve().parents[3]
TRAIN_PY = Path(os.environ.get("DATACLAW_TRAIN_PYTHON", REPO / ".venv-train" / "bin" / "python"))
VERL_PY = Path(os.environ.get("DATACLAW_VERL_PYTHON", REPO / ".venv-verl" / "bin" / "python"))
PROBES = Path(__file__).parent / "bench"

# a reference in the shape `tailor run` writes for world_model_prediction (samples.jsonl "output")
REF = {
    "input_frames": [239, 245],
    "output_frames": [279],
    "question": "What happens next in this scene?",
    "answer": "The person reaches the far side of the room.",
    "reasoning": "They keep walking in the same direction in the earlier frames.",
}
INTENT = "world_model_prediction"


def answer(**changes: Any) -> str:
    return json.dumps({**REF, **changes})


def test_format_reward_valid_schema_violation_and_truncation() -> None:
    valid = R.parse_completion(answer())
    assert R.format_reward(valid, INTENT) == 1.0
    missing = json.loads(answer())
    del missing["answer"]
    assert R.format_reward(R.parse_completion(json.dumps(missing)), INTENT) == -0.5
    truncated = answer()[:-20]  # cut off mid-string, as at max_tokens
    assert R.format_reward(R.parse_completion(truncated), INTENT) == -1.0
    assert R.format_reward(R.parse_completion("Sure! Here is the JSON you asked for."), INTENT) == -1.0
    # a think block before the answer is the CoT, not a syntax error; a fenced answer parses too
    assert R.format_reward(R.parse_completion("<think>frames 239..279</think>\n" + answer()), INTENT) == 1.0
    assert R.format_reward(R.parse_completion("```json\n" + answer() + "\n```"), INTENT) == 1.0


def test_anchor_reward_against_reference_and_anchors() -> None:
    same = R.anchor_reward(R.parse_completion(answer()), INTENT, REF)
    assert same == 1.0
    # reversed: pred 279, 245 → 239 against 239, 245 → 279; joint range 239..279
    rev = R.anchor_reward(
        R.parse_completion(answer(input_frames=[279, 245], output_frames=[239])), INTENT, REF
    )
    # by hand: normalised ref = [0, .15, 1], pred = [1, .15, 0]; both piecewise linear over [0, .5, 1]
    ts = [i / 49 for i in range(50)]

    def interp(v: list[float], t: float) -> float:
        return v[0] + (v[1] - v[0]) * t / 0.5 if t <= 0.5 else v[1] + (v[2] - v[1]) * (t - 0.5) / 0.5

    ref_n, pred_n = [0.0, 6 / 40, 1.0], [1.0, 6 / 40, 0.0]
    d = sum(abs(interp(pred_n, t) - interp(ref_n, t)) for t in ts) / 50
    assert rev == pytest.approx(math.exp(-d / 0.2))
    assert 0 < rev < same
    # against anchors (frame indices of the stream's anchors) instead of the reference
    on = R.anchor_reward(R.parse_completion(answer()), INTENT, anchors=[239, 245, 279])
    off = R.anchor_reward(R.parse_completion(answer()), INTENT, anchors=[279, 250, 239])
    assert on == pytest.approx(1.0) and off < on
    # not JSON: 0; an intent without trajectory: None (no signal)
    assert R.anchor_reward(R.parse_completion("{"), INTENT, REF) == 0.0
    lesson = {
        "key_concept": "Hashing",
        "question": "What is a hash?",
        "steps": ["a step here", "another one"],
    }
    assert R.anchor_reward(R.parse_completion(json.dumps(lesson)), "interleaved_lesson", lesson) is None


def test_efficiency_on_a_group_with_known_lengths() -> None:
    rewards = [1.7, 1.6, 1.5, 1.4, 0.2, 0.1]
    lengths = [40, 60, 50, 55, 200, 5]
    out = R.efficiency_rewards(rewards, lengths)
    # top 3 by reward (lengths 40, 60, 50) set the band [40·0.75, 60·1.25] = [30, 75]: they get 0
    assert out[:3] == [0.0, 0.0, 0.0]
    assert out[3] == pytest.approx(0.1)  # 55 in band
    assert out[4] == pytest.approx(-1.0)  # 200: (200 − 75)/75 > 1, capped
    assert out[5] == pytest.approx(-(30 - 5) / 30)  # 5: too short by 25/30 of the band's floor
    assert R.efficiency_rewards([1.0], [10]) == [0.0]


def test_group_advantages() -> None:
    adv = R.group_advantages([1.0, 2.0, 3.0, 6.0])
    assert sum(adv) == pytest.approx(0.0, abs=1e-12)
    mu, sd = 3.0, math.sqrt(((1 - 3) ** 2 + (2 - 3) ** 2 + 0 + (6 - 3) ** 2) / 3)
    assert adv == pytest.approx([(x - mu) / sd for x in (1.0, 2.0, 3.0, 6.0)])
    assert R.group_advantages([0.7, 0.7, 0.7]) == [0.0, 0.0, 0.0]  # σ = 0
    assert R.group_advantages([]) == []


# ------------------------------------------------------------------------------------------------
# TRL's calling convention


def trl_batch() -> dict[str, Any]:
    """Two prompts × 3 generations, conversational, each row with the dataset's columns (as TRL's
    RepeatSampler hands them to ``_calculate_rewards``)."""
    prompt_a = [{"role": "user", "content": "<image><image>Predict what happens next. Answer in JSON."}]
    prompt_b = [{"role": "user", "content": "Write a short lesson from this slide. Answer in JSON."}]
    lesson = {
        "key_concept": "Hashing",
        "question": "What is a hash function?",
        "steps": ["Define it here.", "Give an example."],
    }
    rows = [(prompt_a, INTENT, REF)] * 3 + [(prompt_b, "interleaved_lesson", lesson)] * 3
    inputs = [
        {"prompt": p, "intent": i, "reference": json.dumps(r), "source_id": n}
        for n, (p, i, r) in enumerate(rows)
    ]
    texts = [
        "<think>two frames, then one later</think>" + answer(),
        answer(input_frames=[279, 245], output_frames=[239]),
        answer()[:-30],
        json.dumps(lesson),
        json.dumps({**lesson, "extra": 1}),
        "I cannot do that.",
    ]
    completions = [[{"role": "assistant", "content": t}] for t in texts]
    return {"inputs": inputs, "completions": completions}


def call_like_trl(batch: dict[str, Any]) -> list[list[float | None]]:
    """``GRPOTrainer._calculate_rewards`` (TRL 1.16), the synchronous branch, line for line."""
    inputs, completions = batch["inputs"], batch["completions"]
    prompts = [x["prompt"] for x in inputs]
    keys = [key for key in inputs[0] if key not in ["prompt", "completion", "completion_ids"]]
    reward_kwargs: dict[str, Any] = {key: [example[key] for example in inputs] for key in keys}
    reward_kwargs["trainer_state"] = object()
    reward_kwargs["log_extra"] = lambda *a, **k: None
    reward_kwargs["log_metric"] = lambda *a, **k: None
    out = []
    for func in [*R.REWARD_FUNCS, R.tailor_reward]:
        got = func(
            prompts=prompts, completions=completions, completion_ids=[[1]] * len(prompts), **reward_kwargs
        )
        assert len(got) == len(prompts)
        out.append([math.nan if v is None else v for v in got])
    return [list(row) for row in zip(*out, strict=True)]


def check_rows(rows: list[list[float | None]]) -> None:
    fmt = [r[0] for r in rows]
    assert fmt == [1.0, 1.0, -1.0, 1.0, -0.5, -1.0]
    anc = [r[1] for r in rows]
    assert anc[0] == pytest.approx(1.0) and 0 < anc[1] < 0.5 and anc[2] == 0.0
    assert all(a is None or a != a for a in anc[3:])  # lessons have no trajectory: NaN / None
    eff = [r[2] for r in rows]
    # group A: top 2 of 3 (ranks 0, 1); the truncated one has no CoT (0 words) far under the band
    assert eff[0] == 0.0 and eff[1] == 0.0 and eff[2] == pytest.approx(-1.0)
    total = [r[3] for r in rows]
    for r in rows:
        expect = 0.7 * r[0] + 1.0 * (0.0 if r[1] is None or r[1] != r[1] else r[1]) + 0.3 * r[2]
        assert r[3] == pytest.approx(expect, abs=1e-6)
    assert total[0] > total[1] > total[2]
    assert eff[5] == 0.0  # in the (empty) band, but not JSON: no bonus for an answer that failed format


def test_reward_functions_called_as_trl_calls_them() -> None:
    check_rows(call_like_trl(trl_batch()))


@pytest.mark.slow
@pytest.mark.skipif(not TRAIN_PY.is_file(), reason="no trainer venv (make train-setup)")
def test_reward_functions_in_trls_own_calculate_rewards(tmp_path: Path) -> None:
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(trl_batch()))
    done = subprocess.run(
        [str(TRAIN_PY), str(PROBES / "rewards_trl_probe.py"), str(path)],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["names"] == [f.__name__ for f in [*R.REWARD_FUNCS, R.tailor_reward]]
    assert found["weights"] == [0.7, 1.0, 0.3]
    check_rows(found["rewards"])
    flat = lambda rows: [math.nan if v is None else v for row in rows for v in row]  # noqa: E731
    assert flat(found["rewards"]) == pytest.approx(flat(call_like_trl(trl_batch())), nan_ok=True)


# ------------------------------------------------------------------------------------------------
# VERL


def verl_batch() -> list[dict[str, Any]]:
    a = {
        "data_source": f"dataclaw/tailor/{INTENT}",
        "solution_str": answer(),
        "ground_truth": json.dumps(REF),
    }
    b = {"data_source": "dataclaw/tailor", "solution_str": "not json", "ground_truth": REF}
    return [{**a, "extra_info": {}}, {**b, "extra_info": {"intent": INTENT}}]


def test_compute_score_signature() -> None:
    a, b = (R.compute_score(**item) for item in verl_batch())
    assert a == {"score": pytest.approx(1.7), "format": 1.0, "anchor": 1.0, "has_anchor": 1.0}
    assert b["score"] == pytest.approx(-0.7) and b["anchor"] == 0.0


@pytest.mark.slow
@pytest.mark.skipif(not VERL_PY.is_file(), reason="no VERL venv (make verl-setup)")
def test_compute_score_loaded_by_verl(tmp_path: Path) -> None:
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(verl_batch()))
    done = subprocess.run(
        [str(VERL_PY), str(PROBES / "rewards_verl_probe.py"), str(path)],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    scores = json.loads(done.stdout.strip().splitlines()[-1])
    assert scores["file"] == scores["pkg"] == [R.compute_score(**item) for item in verl_batch()]


def test_missing_intent_column_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="'intent' column"):
        R.tailor_format_reward(prompts=["p"], completions=["{}"], reference=[REF])
