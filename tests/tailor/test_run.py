"""``dataclaw tailor run`` end to end on a real video with a vague request: ingest → fuzzy intent choice →
synthesis → validation → materialisation → export, against an OpenAI-compatible server; a rerun resumes
without a single model call."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: makes `support` importable

from dataclaw.cli.app import _run
from support.openai_server import OpenAIServer, Reply

pytestmark = pytest.mark.slow
REQUEST = "make some training data from this video"


def _props(body: dict[str, Any]) -> dict[str, Any] | None:
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    return schema.get("properties")


def model_calls(server: OpenAIServer) -> int:
    """Requests of the pipeline itself (the endpoint probe before the run asks a few of its own)."""
    return sum(1 for b in server.chat_bodies() if (_props(b) or {}).keys() - {"probe"})


def _colour(body: dict[str, Any]) -> str | None:
    """The colour of a one-colour image in the request (the endpoint probe's images test), if any."""
    import base64
    import io

    from PIL import Image

    for m in body.get("messages", []):
        for part in m.get("content") if isinstance(m.get("content"), list) else []:
            url = (part.get("image_url") or {}).get("url", "")
            if url.startswith("data:"):
                r, g, b = (
                    Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
                    .convert("RGB")
                    .getpixel((0, 0))
                )
                return "red" if r > b else "blue"
    return None


def answer(req: Any) -> Reply:
    """A careful annotator: choose intents, or fill the (specialised) schema it was sent validly."""
    props = _props(req.body or {})
    if props is None:  # the endpoint probe: plain chat, tools, images (a vision model sees colours)
        return Reply.text(_colour(req.body or {}) or "OK")
    if "probe" in props:
        return Reply.json({"probe": 7})
    if "intents" in props:
        offered = props["intents"]["items"]["enum"]
        keep = [i for i in ("video_generation_segment", "world_model_prediction") if i in offered]
        return Reply.json(
            {"intents": keep or offered[:1], "reason": "The clip has steady motion to learn from."}
        )
    if "motion_plan" in props:
        seg = props["segment"]["properties"]
        lo, hi = seg["start"]["minimum"], seg["end"]["maximum"]
        frames = [f for f in props["key_frames"]["items"]["enum"] if lo <= f <= hi]
        return Reply.json(
            {
                "segment": {"start": lo, "end": hi},
                "prompt": "A person moves across a bright room while the camera follows them.",
                "motion_plan": ["the person walks in", "the person turns to the camera"],
                "camera_motion": "tracking",
                "key_frames": frames[:3],
            }
        )
    if "output_frames" in props:
        frames = props["input_frames"]["items"]["enum"]
        return Reply.json(
            {
                "input_frames": frames[:2],
                "output_frames": frames[-1:],
                "question": "What happens next in this scene?",
                "answer": "The person reaches the far side of the room.",
                "reasoning": "They keep walking in the same direction in the earlier frames.",
            }
        )
    raise AssertionError(f"unexpected request with fields {sorted(props)}")


def test_tailor_run_with_a_vague_request(shared_data: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    with OpenAIServer(responder=answer) as server:
        model = f"{server.base_url}::vlm"
        argv = [
            "tailor", "run", str(shared_data / "videos/dj_video1.mp4"), "--out", str(run),
            "--request", REQUEST, "--model", model, "--extractors", "shots,motion",
            "--workers", "1", "--json",
        ]  # fmt: skip
        assert _run(argv) == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        calls, probes = model_calls(server), server.request_count - model_calls(server)
        assert _run(argv) == 0, "rerun"
        again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert server.request_count == calls + probes, "a resumed run repeats no call (nor the probe)"

    [choice] = summary["intent_choices"]
    assert choice["request"] == REQUEST and choice["method"] == "embedding+model"
    assert set(choice["chosen"]) == {"video_generation_segment", "world_model_prediction"}
    n = summary["candidates"]
    assert n >= 1 and summary["requests"] == 2 * n and calls == 2 * n + 1
    assert summary["counts"]["samples"] == 2 * n and summary["rejects"] == {}
    assert summary["export"]["samples"] == 2 * n and summary["usage"]["calls"] == 2 * n + 1
    assert summary["usage_by_model"][model]["calls"] == 2 * n + 1
    assert summary["model_requests"][model]["started"] == 2 * n + 1
    assert again["counts"] == summary["counts"]

    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    for s in samples:
        assert s["route"]["intent_choice"]["reason"] == "The clip has steady motion to learn from."
        assert s["route"]["intent_choice"]["intent"] == s["intent"] and s["route"]["router"] == "omni"
        assert s["media"], "materialised media are referenced"
    artifacts = [json.loads(line) for line in (run / "artifacts.jsonl").read_text().splitlines()]
    assert all((run / a["path"]).is_file() for a in artifacts)
    gen = next(s for s in samples if s["intent"] == "video_generation_segment")
    clip = next(a for a in artifacts if a["sample_id"] == gen["id"] and a["kind"] == "clip")
    assert clip["frames"] == gen["output"]["segment"]["end"] - gen["output"]["segment"]["start"] + 1
    assert (run / "export/jsonl/samples.jsonl").is_file()
    manifest = json.loads((run / "manifest.json").read_text())
    assert "usage" in manifest["models"] and manifest["request"] == REQUEST


def test_intent_and_request_are_exclusive(tmp_path: Path, capsys) -> None:
    argv = ["tailor", "run", str(tmp_path), "--out", str(tmp_path / "r"), "--intent", "vln_navigation",
            "--request", "anything"]  # fmt: skip
    assert _run(argv) == 1
    assert "not both" in capsys.readouterr().err
