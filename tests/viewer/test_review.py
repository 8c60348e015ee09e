"""Human verdicts: the verdict file, the server's POST and next-unreviewed, exports that honour verdicts,
the import of a static export's download, agreement with the gates; trials of a task side by side."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.request import Request, urlopen

import pytest

from dataclaw.cli.app import _run
from dataclaw.core.review import VERDICTS_FILE, Verdict, append_verdicts, read_reviews, review_filter
from dataclaw.viewer import open_site
from dataclaw.viewer.compare import calls_of, first_divergence
from dataclaw.viewer.verdicts import agreement

SAMPLES = 4


def _more_samples(run: Path, n: int = SAMPLES) -> list[str]:
    """The quickstart's one real sample as ``n`` samples (own ids, same clip): enough to leave one out."""
    first = json.loads((run / "samples.jsonl").read_text().splitlines()[0])
    ids = [first["id"]] + [f"{first['id']}-copy{i}" for i in range(1, n)]
    lines = [json.dumps({**first, "id": i}) for i in ids]
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n")
    return ids


def _post(
    base: str, key: str, body: dict | bytes, ctype: str = "application/json", origin: str | None = None
):
    import urllib.error

    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": ctype, **({"Origin": origin} if origin else {})}
    req = Request(f"{base}r/{key}/verdicts", data=data, headers=headers, method="POST")
    try:
        with urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def test_last_decision_wins_notes_accumulate_and_bad_lines_are_named(tmp_path: Path) -> None:
    stamp = "2026-12-05T06:00:00+00:00"
    append_verdicts(
        tmp_path,
        [
            Verdict("s1", "sample", "reject", "blurry", "ann", stamp),
            Verdict("s1", "sample", "note", "looked again", "bob", stamp),
            Verdict("s1", "sample", "accept", "", "bob", stamp),
            Verdict("s2", "sample", "note", "unsure", "ann", stamp),
        ],
    )
    path = tmp_path / VERDICTS_FILE
    with path.open("a") as fh:
        fh.write('{"id": "s3", "kind": "sample", "verdict": "maybe"}\n{"id": "s4", "ki')  # bad, then torn
    reviews = read_reviews(tmp_path)
    assert reviews.decision("s1") == "accept" and reviews.get("s1").reviewer == "bob"
    assert [v.note for v in reviews.get("s1").notes] == ["looked again"]
    assert reviews.decision("s2") is None and reviews.get("s2").note == "unsure"
    assert reviews.problems == [
        f"{VERDICTS_FILE}: line 5 is not a verdict (verdict must be one of accept, reject, note,"
        " not 'maybe'); skipped",
        f"{VERDICTS_FILE}: line 6 is incomplete (torn); skipped",
    ]
    why = review_filter(tmp_path, "sample", reviewed_only=True)
    assert [why(i) for i in ("s1", "s2", "s9")] == [None, "unreviewed", "unreviewed"]
    assert review_filter(tmp_path, "task")("s1") is None  # a sample's verdict says nothing about a task
    append_verdicts(tmp_path, [Verdict("s1", "sample", "reject", "", "cy", stamp)])  # after the torn line
    assert read_reviews(tmp_path).decision("s1") == "reject"


def test_the_reader_reads_only_what_was_appended_and_starts_over_on_a_new_file(tmp_path: Path) -> None:
    from dataclaw.core.review import ReviewReader

    stamp = "2026-12-05T06:00:00+00:00"
    reader = ReviewReader(tmp_path)
    assert reader.read().by_id == {}
    append_verdicts(tmp_path, [Verdict("s1", "sample", "accept", "", "ann", stamp)])
    assert reader.read().decision("s1") == "accept"
    path = tmp_path / VERDICTS_FILE
    with path.open("a") as fh:
        fh.write('{"id": "s1", "kind": "sample", "verdict": "reject"}')  # no newline yet: being written
    seen = reader.read()
    assert seen.decision("s1") == "accept" and seen.problems == [
        f"{VERDICTS_FILE}: line 2 is incomplete (torn); skipped"
    ]
    with path.open("a") as fh:
        fh.write("\n")  # its newline lands: now it counts
    assert reader.read().decision("s1") == "reject" and reader.read().problems == []
    path.write_text(json.dumps(Verdict("s2", "sample", "reject", "", "bob", stamp).to_dict()) + "\n")
    again = reader.read()  # a shorter, new file: read from the start
    assert again.decision("s1") is None and again.decision("s2") == "reject" and again.lines == 1


def test_post_saves_a_verdict_refuses_what_is_not_one_and_export_leaves_the_rejected_out(
    quickstart: Path, tmp_path: Path
) -> None:
    from tests.viewer.conftest import Served

    run = quickstart / "tailor"
    ids = _more_samples(run)
    site = open_site([quickstart], tmp_path / "cache")
    key = next(r.key for r in site.runs.values() if r.root.name == "tailor")
    served = Served(site)
    try:
        page = served.get(f"r/{key}/samples/1.html")[2].decode()
        assert 'class=review data-id="' + ids[1] in page.replace("section class=review", "class=review")
        assert f'data-save="../../../r/{key}/verdicts"' in page
        status, body = _post(
            served.base, key, {"id": ids[1], "kind": "sample", "verdict": "reject", "note": "x"}
        )
        assert status == 200 and body["decision"] == "reject" and body["saved"]["stage"] == "samples"
        assert body["saved"]["reviewer"]  # the viewer's user when the page sent none
        status, _ = _post(served.base, key, {"id": ids[0], "kind": "sample", "verdict": "accept"})
        assert status == 200
        env_key = next(r.key for r in site.runs.values() if r.root.name == "envcraft")
        task = json.loads((quickstart / "envcraft" / "tasks.jsonl").read_text().splitlines()[1])["id"]
        status, body = _post(served.base, env_key, {"id": task, "kind": "task", "verdict": "accept"})
        assert status == 200 and body["saved"]["stage"] == "tasks"
        assert "review-state ok" in served.get(f"r/{env_key}/tasks/1.html")[2].decode()
        # what is not a verdict of this run is refused, and nothing is written for it
        bad = [
            ({"id": "stream:nope/sample-x", "kind": "sample", "verdict": "accept"}, 400, "has no sample"),
            ({"id": ids[2], "kind": "task", "verdict": "accept"}, 400, "has no task"),
            ({"id": ids[2], "kind": "sample", "verdict": "maybe"}, 400, "verdict must be"),
            ({"id": ids[2], "kind": "sample", "verdict": "note", "note": " "}, 400, "needs the note"),
            ({"id": ids[2], "kind": "sample", "verdict": "reject", "note": "x" * 10_001}, 400, "at most"),
            ({"id": ids[2], "kind": "sample", "verdict": "reject", "reviewer": ["ann"]}, 400, "reviewer"),
        ]
        for raw, code, text in bad:
            status, body = _post(served.base, key, raw)
            assert status == code and text in body["error"], (raw, body)
        assert _post(served.base, key, b"not json")[0] == 400
        form = b"id=x&kind=sample&verdict=reject"
        assert _post(served.base, key, form, "application/x-www-form-urlencoded")[0] == 415
        cross = {"id": ids[2], "kind": "sample", "verdict": "reject"}
        assert _post(served.base, key, cross, origin="http://evil.example")[0] == 403
        # next unreviewed: after 0 comes 2 (1 is decided), and round again to 2 from 3
        for after, want in ((0, 2), (3, 2)):
            with urlopen(f"{served.base}r/{key}/samples/unreviewed?after={after}", timeout=30) as resp:
                assert resp.url.endswith(f"/r/{key}/samples/{want}.html")
        overview = served.get(f"r/{key}/index.html")[2].decode()
        assert "Human review" in overview and "Rejected by a reviewer, passed by the gates" in overview
    finally:
        served.close()
    lines = (run / VERDICTS_FILE).read_text().splitlines()
    assert len(lines) == 2
    stage_files = {p.name: p.read_bytes() for p in run.glob("*.jsonl")}
    out = tmp_path / "export"
    assert _run(["tailor", "export", str(run), "-f", "jsonl", "-o", str(out), "--no-verify", "--json"]) == 0
    kept = [json.loads(x)["id"] for x in (out / "samples.jsonl").read_text().splitlines()]
    assert kept == [ids[0], *ids[2:]]
    rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]
    assert [(r["id"], r["reason"]) for r in rejects] == [(ids[1], "human_rejected")]
    assert (
        _run(["tailor", "export", str(run), "-f", "jsonl", "-o", str(out), "--no-verify", "--reviewed-only"])
        == 0
    )
    kept = [json.loads(x)["id"] for x in (out / "samples.jsonl").read_text().splitlines()]
    assert kept == [ids[0]]
    assert {p.name: p.read_bytes() for p in run.glob("*.jsonl")} == stage_files  # stage files untouched


def test_agreement_lists_the_gates_that_passed_what_a_reviewer_rejected(
    quickstart: Path, tmp_path: Path
) -> None:
    run = quickstart / "tailor"
    ids = _more_samples(run, 3)
    failed = json.loads((run / "samples.jsonl").read_text().splitlines()[2])
    failed["checks"]["grounded_text"] = False  # a sample whose record says a gate failed it
    bare = {**failed, "id": failed["id"] + "-bare", "checks": {}}  # one that records no gate at all
    lines = (run / "samples.jsonl").read_text().splitlines()
    (run / "samples.jsonl").write_text("\n".join([*lines[:2], json.dumps(failed), json.dumps(bare)]) + "\n")
    tasks = [json.loads(x)["id"] for x in (quickstart / "envcraft" / "tasks.jsonl").read_text().splitlines()]
    stamp = "2026-12-05T06:00:00+00:00"
    append_verdicts(
        run,
        [
            Verdict(ids[0], "sample", "reject", "the answer names a frame it never selected", "ann", stamp),
            Verdict(ids[1], "sample", "accept", "", "ann", stamp),
            Verdict(ids[2], "sample", "accept", "", "ann", stamp),
            Verdict("stream:gone/sample-x", "sample", "reject", "", "ann", stamp),
            Verdict(bare["id"], "sample", "reject", "", "ann", stamp),
        ],
    )
    append_verdicts(quickstart / "envcraft", [Verdict(tasks[0], "task", "reject", "ambiguous", "bob", stamp)])
    site = open_site([quickstart], tmp_path / "cache")
    runs = {r.root.name: r for r in site.runs.values()}
    a = agreement(runs["tailor"])
    assert (a["reviewed"], a["accepted"], a["rejected"], a["agree"], a["not_in_run"]) == (4, 2, 2, 1, 1)
    assert (a["compared"], a["no_gates"]) == (3, 1)  # no gates recorded is not "the gates passed it"
    assert a["agreement"] == pytest.approx(1 / 3, abs=1e-3)
    [missed] = a["rejected_but_gates_passed"]
    assert (
        missed["id"] == ids[0]
        and "grounded_text" in missed["gates_passed"]
        and "schema" in missed["gates_passed"]
    )
    [lenient] = a["accepted_but_gates_failed"]
    assert lenient["id"] == ids[2] and lenient["gates_failed"] == ["grounded_text"]
    # responses: a reviewer overrules the validator that rejected one, and agrees with one that passed
    responses = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    verdicts = site.runs[runs["tailor"].key].verdicts["validated"]
    failed_resp = next(r["id"] for r in responses if verdicts.get(r["id"]) == "frames_out_of_order")
    passed_resp = next(r["id"] for r in responses if verdicts.get(r["id"]) == "")
    append_verdicts(
        run,
        [
            Verdict(failed_resp, "response", "accept", "repeated frames are a hold", "ann", stamp),
            Verdict(passed_resp, "response", "accept", "", "ann", stamp),
        ],
    )
    a = agreement(runs["tailor"])
    overruled = [r for r in a["accepted_but_gates_failed"] if r["kind"] == "response"]
    assert [(r["id"], r["gates_failed"]) for r in overruled] == [(failed_resp, ["validation:ordered"])]
    assert (a["compared"], a["agree"]) == (5, 2)
    t = agreement(runs["envcraft"])
    [missed] = t["rejected_but_gates_passed"]
    assert missed["gates_passed"] == ["verifier_proof"] and missed["note"] == "ambiguous"


def test_task_export_leaves_out_the_rejected_task(quickstart: Path, tmp_path: Path) -> None:
    from dataclaw.envcraft.export import export_tasks
    from dataclaw.envcraft.export.base import ExportError

    run = quickstart / "envcraft"
    tasks = [json.loads(x)["id"] for x in (run / "tasks.jsonl").read_text().splitlines()]
    stamp = "2026-12-05T06:00:00+00:00"
    append_verdicts(run, [Verdict(tasks[0], "task", "reject", "", "ann", stamp)])
    result = export_tasks(run / "tasks.jsonl", "trl", tmp_path / "trl", check=False)
    assert result.tasks == 1 and result.left_out == {"human_rejected": 1}
    written = [json.loads(x)["id"] for x in (tmp_path / "trl" / "tasks.jsonl").read_text().splitlines()]
    assert written == [tasks[1]]
    with pytest.raises(ExportError, match="no task left to export after the review"):
        export_tasks(run / "tasks.jsonl", "trl", tmp_path / "trl2", check=False, reviewed_only=True)
    append_verdicts(run, [Verdict(tasks[1], "task", "accept", "", "ann", stamp)])
    result = export_tasks(run / "tasks.jsonl", "trl", tmp_path / "trl3", check=False, reviewed_only=True)
    assert result.tasks == 1


def test_import_verdicts_checks_every_line_against_the_run(quickstart: Path, tmp_path: Path, capsys) -> None:
    run = quickstart / "tailor"
    ids = _more_samples(run, 2)
    good = tmp_path / "verdicts.jsonl"
    rows = [
        {"id": ids[0], "kind": "sample", "verdict": "reject", "note": "", "reviewer": "ann",
         "time": "2026-12-05T06:00:00.000Z"},
        {"id": ids[1], "kind": "sample", "verdict": "note", "note": "fine?", "reviewer": "ann",
         "time": "2026-12-05T06:01:00.000Z"},
    ]  # fmt: skip
    good.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _run(["view", "--import-verdicts", str(good), str(run)]) == 0
    assert "imported 2 verdict(s)" in capsys.readouterr().out
    assert _run(["view", "--import-verdicts", str(good), str(run)]) == 0  # again: nothing twice
    assert "imported 0 verdict(s)" in capsys.readouterr().out
    assert read_reviews(run).decision(ids[0]) == "reject"
    stranger = tmp_path / "other.jsonl"
    stranger.write_text(json.dumps({**rows[0], "id": "stream:elsewhere/sample-y"}) + "\n")
    assert _run(["view", "--import-verdicts", str(stranger), str(run)]) == 1
    err = capsys.readouterr().err
    assert "name records that are not in" in err and "Traceback" not in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(rows[0]) + "\n{not json\n")
    assert _run(["view", "--import-verdicts", str(broken), str(run)]) == 1
    assert "line 2 is not valid JSON" in capsys.readouterr().err
    assert len((run / VERDICTS_FILE).read_text().splitlines()) == 2


def test_first_divergence_is_the_first_call_the_trials_do_not_share() -> None:
    def trial(*calls: tuple[str, dict]) -> dict:
        return {"steps": [{"tool": t, "arguments": json.dumps(a)} for t, a in calls]}

    a = trial(("get_event", {"id": "e1", "x": 1}), ("cancel", {"id": "e1"}))
    same = trial(("get_event", {"x": 1, "id": "e1"}), ("cancel", {"id": "e1"}))  # key order does not count
    other = trial(("get_event", {"id": "e1", "x": 1}), ("cancel", {"id": "e2"}))
    short = trial(("get_event", {"id": "e1", "x": 1}))
    assert first_divergence([calls_of(a), calls_of(same)]) is None
    assert first_divergence([calls_of(a), calls_of(same), calls_of(other)]) == 1
    assert first_divergence([calls_of(a), calls_of(short)]) == 1
    assert first_divergence([calls_of(trial()), calls_of(short)]) == 0
    assert first_divergence([calls_of(a)]) is None


def test_trials_page_shows_pass_k_and_the_divergence(quickstart: Path, tmp_path: Path) -> None:
    run = quickstart / "envcraft"
    rollouts = [json.loads(x) for x in (run / "rollouts.jsonl").read_text().splitlines()]
    base = next(r for r in rollouts if r["steps"])  # a real rollout with four tool calls
    trials = []
    for k, reward in enumerate((1.0, 1.0, 0.0)):
        steps = [dict(s) for s in base["steps"]]
        if k == 2:
            steps[2] = {**steps[2], "arguments": json.dumps({"duration_minutes": 15})}
        comps = {"db": {"score": reward, "weight": 1.0, "detail": "state hash"}}
        trials.append(
            {**base, "id": f"{base['task_id']}/rollout-s{k}", "sample": k, "steps": steps, "reward": reward}
            | {"reward_components": comps}
        )
    others = [r for r in rollouts if r["task_id"] != base["task_id"]]
    (run / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*others, *trials]))
    site = open_site([run], tmp_path / "cache")
    key = next(iter(site.runs))
    first = len(others)
    html = site.render(f"r/{key}/trials/{first}.html")
    head = "<th class=call>call</th><th>trial 0</th><th>trial 1</th><th>trial 2</th>"
    assert f"<thead><tr>{head}</tr></thead>" in html
    assert "pass^1 = 0.6667 · pass^2 = 0.3333 · pass^3 = 0" in html  # C(2,k)/C(3,k) by hand
    assert "trials first differ at tool call 3 (turn 3): same tool, different arguments" in html
    assert "<th>reward components</th>" in html and html.count("<code>db</code> 0.0 ×1.0") == 1
    assert html.count("<tr class=diverge>") == 1 and "class=differs" in html
    task_pos = site.runs[key].index("tasks").find(base["task_id"])
    task_page = site.render(f"r/{key}/tasks/{task_pos}.html")
    assert f"trials/{first}.html" in task_page and "3 trial(s) of this task side by side" in task_page
    listing = site.render(f"r/{key}/rollouts/p1.html")
    assert listing.count(f'href="../../../r/{key}/trials/{first}.html">3 trials</a>') == 3
    from dataclaw.viewer.site import NotFound

    with pytest.raises(NotFound):
        site.render(f"r/{key}/trials/99.html")
    alone = site.render(f"r/{key}/trials/0.html")  # a task with one trial has nothing to compare
    assert "one trial: nothing to compare" in alone and "<tr class=diverge>" not in alone
