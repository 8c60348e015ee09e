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
                r, _g, b = (
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
    # the canned annotator writes one text per intent whatever the clip: across the run, every sample
    # after the first of its intent is a duplicate (issue 27 dedup)
    assert summary["counts"]["validated"] == 2 * n and summary["counts"]["samples"] == 2
    assert summary["rejects"] == ({"dedup:duplicate_exact": 2 * n - 2} if n > 1 else {})
    assert summary["export"]["samples"] == 2 and summary["usage"]["calls"] == 2 * n + 1
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
    caps = manifest["models"]["capabilities"][model]  # probed before ingest
    assert caps["chat"] and caps["images"]


def test_intent_and_request_are_exclusive(tmp_path: Path, capsys) -> None:
    argv = ["tailor", "run", str(tmp_path), "--out", str(tmp_path / "r"), "--intent", "vln_navigation",
            "--request", "anything"]  # fmt: skip
    assert _run(argv) == 1
    assert "not both" in capsys.readouterr().err


# run directories that tell the truth -------------------------------------------------------------------
VIDEO_INTENTS = ["--intent", "video_generation_segment", "--intent", "world_model_prediction"]
ROBOT_INTENTS = [
    "--intent", "describe_current_subtask", "--intent", "predict_next_subtask",
    "--intent", "robot_fault_recovery",
]  # fmt: skip
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DATACLAW = str(Path(sys.executable).parent / "dataclaw")


def _cli_env(tmp_path: Path) -> dict[str, str]:
    import os

    return {**os.environ, "DATACLAW_CACHE_DIR": str(tmp_path / "cache")}


def _slow_answers(delay: float):
    """Probe answers at once; the pipeline's requests take ``delay`` seconds and get an empty object."""

    def reply(req: Any) -> Reply:
        props = _props(req.body or {})
        if props is None:
            return Reply.text(_colour(req.body or {}) or "OK")
        if "probe" in props:
            return Reply.json({"probe": 7})
        return Reply.json({}, delay=delay)

    return reply


def test_sigkill_mid_run_leaves_a_manifest_that_counts_every_request(
    shared_data: Path, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import time

    run = tmp_path / "run"
    with OpenAIServer(responder=_slow_answers(0.4)) as server:
        model = f"{server.base_url}::vlm"
        argv = [
            DATACLAW, "tailor", "run", str(shared_data / "lerobot_g1"), "--out", str(run), *ROBOT_INTENTS,
            "--model", model, "--extractors", "proprio", "--workers", "1", "--concurrency", "4", "--json",
        ]  # fmt: skip
        proc = subprocess.Popen(argv, env=_cli_env(tmp_path), stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and model_calls(server) < 6 and proc.poll() is None:
            time.sleep(0.02)
        assert proc.poll() is None, f"the run ended before it was killed: {proc.stderr.read()}"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.6)  # requests already at the server finish there
        received = model_calls(server)
    manifest = json.loads((run / "manifest.json").read_text())
    sent = manifest["models"]["requests"]["by_model"][model]
    print(json.dumps({"server_received": received, "manifest": sent}))
    assert received >= 6
    assert received <= sent["started"] <= received + 4, "every request that reached the server is counted"
    assert sent["answered"] + sent["failed"] + sent["in_flight"] == sent["started"]
    usage = manifest["models"]["usage"]["by_model"][model]
    assert 0 < usage["calls"] <= sent["started"] and usage["prompt_tokens"] > 0, "tokens saved as it went"
    assert not (run / "_tmp").exists(), "no temp folder left"


def test_a_changed_model_makes_new_answers_and_supersedes_the_old(
    shared_data: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    from dataclaw.core.store import RunStore

    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    with OpenAIServer(responder=answer) as server:
        model_a, model_b = f"{server.base_url}::model-a", f"{server.base_url}::model-b"
        base = [
            "tailor", "run", str(shared_data / "videos/dj_video1.mp4"), "--out", str(run), *VIDEO_INTENTS,
            "--extractors", "shots,motion", "--workers", "1", "--json",
        ]  # fmt: skip
        assert _run([*base, "--model", model_a]) == 0
        first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        asked_a = model_calls(server)
        assert _run([*base, "--model", model_b]) == 0
        second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        bodies = [b for b in server.chat_bodies() if (_props(b) or {}).keys() - {"probe"}]
    n = first["requests"]
    assert n >= 2 and second["requests"] == n
    assert len(bodies) == 2 * n and {b["model"] for b in bodies[asked_a:]} == {"model-b"}, "asked model b"
    store = RunStore(run)
    assert {r["model"] for r in store.records("responses")} == {model_b}
    assert len((run / "responses.jsonl").read_text().splitlines()) == 2 * n, "old answers stay in the file"
    samples = list(store.records("samples"))
    # one text per intent from the canned annotator: the rest are duplicates across the run (issue 27)
    kept = len({r["intent"] for r in store.records("responses")})
    assert len(list(store.records("validated"))) == n
    assert len(samples) == kept and {s["route"]["model"] for s in samples} == {model_b}
    exported = [json.loads(x) for x in (run / "export/jsonl/samples.jsonl").read_text().splitlines()]
    assert {s["route"]["model"] for s in exported} == {model_b} and len(exported) == kept
    assert second["counts"]["samples"] == kept and second["counts"]["responses"] == n


def test_a_second_run_on_the_same_directory_refuses(shared_data: Path, tmp_path: Path, capsys) -> None:
    import subprocess
    import time

    run = tmp_path / "run"
    with OpenAIServer(responder=_slow_answers(5.0)) as server:
        argv = [
            "tailor", "run", str(shared_data / "lerobot_g1"), "--out", str(run), *ROBOT_INTENTS,
            "--model", f"{server.base_url}::vlm", "--extractors", "proprio", "--workers", "1",
        ]  # fmt: skip
        proc = subprocess.Popen([DATACLAW, *argv], env=_cli_env(tmp_path), stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while model_calls(server) == 0:  # the first run is in synthesis, holding the directory
                assert time.time() < deadline and proc.poll() is None
                time.sleep(0.05)
            assert _run(argv) == 1
            err = capsys.readouterr().err
            assert f"in use by pid {proc.pid} on " in err and "tailor run" in err and "since" in err
            assert len(err.strip().splitlines()) == 1
        finally:
            proc.kill()
            proc.wait()


def test_an_unreachable_model_stops_before_ingest_with_one_line(tmp_path: Path, capsys) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = tmp_path / "run"
    argv = [
        "tailor", "run", str(EXAMPLES / "lerobot_g1"), "--out", str(run), *ROBOT_INTENTS,
        "--model", f"http://127.0.0.1:{port}/v1::vlm", "--extractors", "proprio", "--workers", "1",
    ]  # fmt: skip
    assert _run(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and str(port) in err[0]
    assert not (run / "streams.jsonl").exists(), "checked before ingest"


def test_a_run_whose_every_request_fails_exits_non_zero(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))

    def refuse(req: Any) -> Reply:
        props = _props(req.body or {})
        if props is None:
            return Reply.text(_colour(req.body or {}) or "OK")
        if "probe" in props:
            return Reply.json({"probe": 7})
        return Reply.error(400, "this request is too long for the model's context window")

    with OpenAIServer(responder=refuse) as server:
        argv = [
            "tailor", "run", str(EXAMPLES / "lerobot_g1"), "--out", str(tmp_path / "run"), *ROBOT_INTENTS,
            "--model", f"{server.base_url}::vlm", "--extractors", "proprio", "--workers", "1",
        ]  # fmt: skip
        assert _run(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:"), err


def test_a_response_id_changes_with_the_model_the_intent_definition_and_the_seed() -> None:
    from dataclaw.tailor.intents.registry import IntentCatalog
    from dataclaw.tailor.pipeline import TailorRunConfig, response_id
    from dataclaw.tailor.synthesis.route import RouteConfig

    intent = IntentCatalog.builtin().get("describe_current_subtask")
    edited = intent.model_copy(update={"description": intent.description + " Be brief."})

    def rid(model: str = "openai:a", it=intent, seed: int = 0, cands: str | None = "c1") -> str:
        config = TailorRunConfig(route=RouteConfig.omni(model), intents=[it.id], seed=seed)
        return response_id("stream:s-1/cand-k-2", it, config, cands)

    assert rid() == rid(), "deterministic"
    assert rid().startswith("stream:s-1/cand-k-2/resp-describe_current_subtask-")
    others = {rid("openai:b"), rid(it=edited), rid(seed=1), rid(cands="c2")}
    assert rid() not in others and len(others) == 4


def _has_image(body: dict[str, Any]) -> bool:
    return any(isinstance(m.get("content"), list) for m in body.get("messages", []))


def text_only(req: Any) -> Reply:
    """A text-only server: requests with images get the HTTP 500 such servers send."""
    body = req.body or {}
    if _has_image(body):
        return Reply.error(500, "Image input is not supported for this model")
    props = _props(body)
    if props is None:
        return Reply.text("OK")
    return answer(req)


@pytest.mark.parametrize("mode", ["always", "auto", "auto+text-only"])
def test_images_to_a_text_only_server(
    shared_data: Path, tmp_path: Path, monkeypatch, capsys, mode: str
) -> None:
    """The probe finds the server text-only: a visual intent is refused before the run in one line
    (whatever --send-images says), unless --text-only-evidence: then no frame is sent at all and every
    sample is marked text_only."""
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    with OpenAIServer(responder=text_only) as server:
        model = f"{server.base_url}::text-only"
        argv = [
            "tailor", "run", str(shared_data / "videos/dj_video1.mp4"), "--out", str(run), *VIDEO_INTENTS,
            "--model", model, "--extractors", "shots,motion", "--workers", "1", "--json",
            "--send-images", mode.split("+")[0], *(["--text-only-evidence"] if "+" in mode else []),
        ]  # fmt: skip
        code = _run(argv)
        out, err = capsys.readouterr()
        with_images = sum(
            1 for b in server.chat_bodies() if _has_image(b) and (_props(b) or {}).keys() - {"probe"}
        )
    assert with_images == 0, "no pipeline request carried an image"
    if "+" not in mode:  # refused before ingest: one line naming the intents, the model and the opt-in
        assert code == 1 and len(err.strip().splitlines()) == 1, err
        assert "video_generation_segment, world_model_prediction must see frames/video" in err
        assert f"model {model} is text-only" in err and "--text-only-evidence" in err
        assert not (run / "streams.jsonl").exists()
        return
    assert code == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["counts"]["responses"] == summary["requests"] > 0, "answered from anchors as text"
    samples = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    assert (
        samples
        and {s["evidence"] for s in samples} == {"text_only"}
        and summary["export"]["evidence"] == {"text_only": len(samples)}
    )
