"""Every page kind, rendered from the quickstart's real records (no browser)."""

from __future__ import annotations

import re

import pytest

from dataclaw.viewer.site import Site


def test_the_home_page_lists_each_run_of_a_quickstart_folder(site: Site) -> None:
    html = site.render("index.html")
    names = {r.root.name for r in site.runs.values()}
    assert {"tailor", "envcraft"} <= names
    for run in site.runs.values():
        assert f'href="r/{run.key}/index.html"' in html


def test_overview_shows_manifest_usage_counts_funnel_and_rejects_by_reason(
    site: Site, keys: dict[str, str]
) -> None:
    html = site.render(f"r/{keys['tailor']}/index.html")
    assert "tailor run" in html  # the manifest's command
    assert "local:smollm2-135m" in html  # models, tokens, cost
    assert "<svg class=funnel" in html
    # one funnel bar per stage, in lineage order
    bars = re.findall(r"<rect [^>]*><title>([a-z_]+): (\d+)</title>", html)
    stages = [b[0] for b in bars]
    assert (
        stages.index("streams")
        < stages.index("candidates")
        < stages.index("responses")
        < stages.index("samples")
    )
    assert ("responses", "3") in bars and ("samples", "1") in bars
    # rejects grouped by reason, with an example message each
    for reason in ("missing_placeholder", "frames_out_of_order", "missing_file"):
        assert f"<code>{reason}</code>" in html
    assert "do not ascend" in html  # the frames_out_of_order reject's message as its example


def test_sample_page_has_intent_request_answer_verdicts_and_the_clip(
    site: Site, keys: dict[str, str]
) -> None:
    key = keys["tailor"]
    html = site.render(f"r/{key}/samples/0.html")
    assert "describe_current_subtask" in html and "embodied" in html
    assert "<video class=clip" in html
    # the clip is lossless RGB H.264, which browsers cannot play: the page points at a preview
    assert f"r/{key}/preview/media/" in html and "browser preview" in html
    for validator in ("schema", "frame_indices", "grounded_text"):
        assert f"<td>{validator}</td>" in html
    assert "Request as sent" in html and "What is the robot" in html
    assert html.count("<figure><img") == 20  # the request's 20 frames as thumbnails
    assert "anchor-segment-e52a53af" in html  # anchors of the candidate
    # lineage: the stream and candidate are links
    lineage = re.search(r"<p class=lineage>(.*?)</p>", html).group(1)
    assert lineage.count("<a href") == 2


def test_responses_filter_by_intent_and_verdict_and_search_text(site: Site, keys: dict[str, str]) -> None:
    key = keys["tailor"]
    base = f"r/{key}/responses/p1.html"
    assert "3 records" in site.render(base)
    assert "1 records match" in site.render(base, {"verdict": "passed"})
    html = site.render(base, {"verdict": "frames_out_of_order"})
    assert "1 records match" in html and "video_generation_segment" in html
    assert "1 records match" in site.render(base, {"intent": "robot_fault_recovery"})
    assert "0 records match" in site.render(base, {"intent": "robot_fault_recovery", "verdict": "passed"})
    assert "1 records match" in site.render(base, {"q": "What went wrong"})


def test_a_rejected_response_shows_the_validator_and_its_message(site: Site, keys: dict[str, str]) -> None:
    site_run = site.runs[keys["tailor"]]
    n = site_run.index("responses").find(
        "stream:lerobot_g1-ep000004-6a1acaad/cand-fault-35-0d8114c4/resp-robot_fault_recovery-5f301be3"
    )
    html = site.render(f"r/{site_run.key}/responses/{n}.html")
    assert "missing_placeholder" in html and "placeholders: answer: missing" in html


def test_task_page_shows_turns_distractors_verifier_and_proof(site: Site, keys: dict[str, str]) -> None:
    key = keys["envcraft"]
    html = site.render(f"r/{key}/tasks/0.html")
    assert "<ol class=turns><li>1. List the conflicts" in html
    assert "<span class=distractor" in html and "E-456" in html  # the distractor added to S0
    assert 'class="why distractor"' in html  # the verifier's assertion that the distractor stays untouched
    assert "gold chain scores <b>1.0</b>" in html and "initial state scores <b>0.25</b>" in html
    assert "rollout-s0-cc9cc7d3" in html  # its rollout, linked


def test_rollout_table_has_tau2s_columns_and_the_trajectory_page_the_conversation(
    site: Site, keys: dict[str, str]
) -> None:
    key = keys["envcraft"]
    html = site.render(f"r/{key}/rollouts/p1.html")
    for col in ("task", "trial", "reward", "read / write", "stop reason", "errors"):
        assert f"<th>{col}</th>" in html
    assert "max_turns" in html and "ModelOutputError" in html
    # two get_event reads, no write, and two find_availability calls whose side effect no kept
    # grounded chain records
    assert "<td>2 / 0 <small>+2 other</small></td>" in html
    run = site.runs[key]
    n = run.index("rollouts").find(
        "env:temporal_scheduling-3ab2432a/chain-0e1730c2/grounded-2182a0ec/task-3b259f5a/rollout-s0-a7bc0a07"
    )
    page = site.render(f"r/{key}/rollouts/{n}.html")
    assert "<div class=toolcall>→ <b>get_event</b>" in page
    assert "invalid_reference" in page  # the tool error kept as the observation
    assert "Task spec (tasks)" in page
    assert "not recorded" in page  # the rollout record holds no per-step state diff


def test_claw_rollout_links_its_audited_task(site: Site, keys: dict[str, str]) -> None:
    key = keys["envcraft"]
    html = site.render(f"r/{key}/rollouts/p1.html")
    assert re.search(
        rf'href="../../../r/{key}/code_audit/\d+.html"[^>]*><code>logistics_manager_review', html
    )
    audit = site.render(f"r/{key}/code_audit/0.html")
    assert "untouched_floor" in audit and "solved score" in audit


def test_environment_page_draws_the_tool_graph(site: Site, keys: dict[str, str]) -> None:
    key = keys["envcraft"]
    assert "temporal_scheduling" in site.render(f"r/{key}/envs/index.html")
    html = site.render(f"r/{key}/envs/temporal_scheduling.html")
    assert "<svg class=toolgraph" in html
    assert '<circle class="write"' in html and '<circle class="read"' in html
    assert "resolve_conflict" in html and "spree_double_bookings" in html
    assert "<line " in html  # an edge from the chains


def test_chain_stream_candidate_artifact_and_reject_pages(site: Site, keys: dict[str, str]) -> None:
    e, t = keys["envcraft"], keys["tailor"]
    assert "list_conflicts" in site.render(f"r/{e}/chains/0.html")
    assert "gold chain scores" in site.render(f"r/{e}/grounded/0.html")
    assert "observation.images.cam_high" in site.render(f"r/{t}/streams/0.html")
    assert "<figure><img" in site.render(f"r/{t}/candidates/0.html")
    assert "<video class=clip" in site.render(f"r/{t}/artifacts/0.html")
    assert "<code>missing_placeholder</code>" in site.render(f"r/{t}/rejects/0.html")


def test_an_unknown_stage_file_and_other_files_get_a_generic_json_view(quickstart, tmp_path) -> None:
    from dataclaw.viewer import open_site

    run = quickstart / "tailor"
    (run / "scores.jsonl").write_text('{"id": "s1", "tailor_score": 0.7, "new_field": [1, 2]}\n')
    (run / "scoring.json").write_text('{"metric": "A.4.4", "value": 0.42}')
    site = open_site([run], tmp_path / "c")
    assert "scores" in site.render("index.html") and "scoring.json" in site.render("index.html")
    assert "tailor_score" in site.render("r/0/scores/p1.html")
    assert "new_field" in site.render("r/0/scores/0.html")
    assert "A.4.4" in site.render("r/0/view/scoring.json.html")


def test_a_stage_file_shown_by_two_kinds_is_refused() -> None:
    """A second page kind for a stage already shown would silently replace the first: refused instead."""
    from dataclaw.core.errors import ConfigError
    from dataclaw.viewer.kinds import KINDS, Kind, kind_of, register

    owner = kind_of("samples")
    with pytest.raises(ConfigError, match=f"stage 'samples' is already shown by kind '{owner.name}'"):
        register(Kind(name="my_samples", title="Mine", stages=("samples",)))
    assert kind_of("samples") is owner and "my_samples" not in KINDS
