"""Records for the DataClaw0-val metric tests: reference samples and model responses in the shapes
`dataclaw tailor run` writes (samples.jsonl / responses.jsonl records, manifest producers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STREAM = "stream:dj_video1-daa391bb"
CAND = f"{STREAM}/cand-dynamic_segment-430f3fad"

# the output of a real world_model_prediction sample (tailor run on examples/videos/dj_video1.mp4)
WMP = {
    "input_frames": [239, 245],
    "output_frames": [279],
    "question": "What happens next in this scene?",
    "answer": "The person reaches the far side of the room.",
    "reasoning": "They keep walking in the same direction in the earlier frames.",
}
WKQ = {
    "question": "Which appliance is on the counter next to the sink?",
    "answer": "A silver kettle.",
    "reasoning": "The frames show a kettle beside the sink on the left side of the counter.",
    "key_frames": [10, 40, 70],
}
GUI = {
    "ordered_labels": ["A", "B", "C", "D"],
    "distractors": ["E"],
    "reconstructed_goal": "Rename the report file and move it into the Archive folder.",
    "reasoning": "A opens the folder, B selects the file, C renames it and D drags it to Archive.",
}


EXPLICIT = {"method": "explicit"}


def sample(intent: str, domain: str, output: dict[str, Any], n: int = 0, **extra: Any) -> dict[str, Any]:
    """A samples.jsonl record (as `tailor run` writes it) around ``output``."""
    cand = f"{STREAM}/cand-{intent}-{n:08x}"
    return {
        "id": f"{cand}/sample-{intent}-{n:08x}",
        "intent": intent,
        "domain": domain,
        "stream_id": f"{STREAM}-{n}",
        "candidate_id": cand,
        "output": output,
        "conversation": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "media": [],
        "route": {"model": "openai:gemini", "router": "omni", "intent_choice": EXPLICIT | {"intent": intent}},
        "provenance": {},
        "checks": {},
        **extra,
    }


def response(ref: dict[str, Any], raw_text: str, producer: str = "afe1ad66079c") -> dict[str, Any]:
    """A responses.jsonl record answering the same candidate (its id differs from the sample's)."""
    return {
        "id": ref["candidate_id"] + f"/resp-{ref['intent']}-9627af29",
        "candidate_id": ref["candidate_id"],
        "stream_id": ref["stream_id"],
        "intent": ref["intent"],
        "domain": ref["domain"],
        "model": "http://127.0.0.1:45967/v1::vlm",
        "router": "omni",
        "intent_choice": {"intent": ref["intent"], "method": "explicit"},
        "request_hash": "214fac22fbc9b0aa",
        "seed": 0,
        "messages": [],
        "images": 8,
        "frames": [239, 245],
        "schema": {},
        "context": {},
        "raw_text": raw_text,
        "output": None,
        "error": None,
        "usage": {"prompt_tokens": 160, "completion_tokens": 34},
        "cost_usd": 0.0,
        "cached": False,
        "latency_s": 1.07,
        "producer": producer,
    }


def write_jsonl(path: Path, records: list[Any], extra_lines: list[str] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) if not isinstance(r, str) else r for r in records] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_run(root: Path, responses: list[dict[str, Any]], producer: str = "afe1ad66079c") -> Path:
    """A run directory holding ``responses`` with the manifest naming their producer."""
    root.mkdir(parents=True, exist_ok=True)
    manifest = {
        "producers": {"responses": {"hash": producer, "of": {}}},
        "counts": {"responses": len(responses)},
    }
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    write_jsonl(root / "responses.jsonl", responses)
    return root
