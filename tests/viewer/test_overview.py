"""The overview answers "what did this run produce, and is it any good": headline figures, per-field
statistics and runs side by side, every figure checked against what the stage files say (read here with
the record store's own readers and the rollout summary, not with the viewer's code)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from dataclaw.core import lock
from dataclaw.core.store import RunStore
from dataclaw.envcraft.rollout.run import rollout_summary
from dataclaw.viewer import open_site
from dataclaw.viewer.markup import LABEL_CHAR_W, graph_svg
from dataclaw.viewer.site import Site


def figures(html: str) -> dict[str, str]:
    """``block.key`` → the raw value each headline figure carries."""
    return dict(re.findall(r'data-figure="([\w.]+)" data-value="([^"]*)"', html))


def truth(root: Path) -> dict[str, float]:
    """The headline figures, counted from the stage files with the store's readers."""
    store = RunStore(root)
    names = {p.stem for p in root.glob("*.jsonl")}
    count = {name: sum(1 for _ in store.records(name)) for name in names if name != "rejects"}
    rejects = Counter(r["stage"] for r in store.rejects())
    out: dict[str, float] = {"run.rejects": sum(rejects.values())}
    if "responses" in names:
        out |= {
            "tailor_run.inputs": count["responses"],
            "tailor_run.kept": count["samples"],
            "tailor_run.yield": count["samples"] / count["responses"],
            "tailor_run.rejected": rejects["validated"],
            "tailor_run.streams": count["streams"],
            "tailor_run.candidates": count["candidates"],
        }
    if "tasks" in names:
        tasks = list(store.records("tasks"))
        tools = [len({s["tool"] for s in t["gold_chain"]}) for t in tasks]
        out |= {
            "tasks.inputs": count["tasks"] + rejects["tasks"],
            "tasks.kept": count["tasks"],
            "tasks.rejected": rejects["tasks"],
            "tasks.grounded": count.get("grounded", 0),
            "tasks.environments": len({t["env"] for t in tasks}),
            "tasks.tools_per_task": sum(tools) / len(tools),
        }
    if "rollouts" in names:
        summary = rollout_summary(list(store.records("rollouts")))
        out |= {
            "rollouts.inputs": summary["rollouts"],
            "rollouts.tasks_tried": summary["tasks"],
            "rollouts.kept": summary["full_reward"],
            "rollouts.pass_rate": summary["full_reward"] / summary["rollouts"],
            "rollouts.mean_reward": summary["mean_reward"],
            **{f"rollouts.pass_hat_{k}": v for k, v in summary["pass_hat_k"].items()},
            "rollouts.turns": summary["mean_turns"],
        }
        rollouts = list(store.records("rollouts"))
        calls = sum(r["metrics"]["tool_calls"] for r in rollouts)
        if calls:
            out["rollouts.valid_calls"] = 1 - sum(r["metrics"]["invalid_calls"] for r in rollouts) / calls
    return out


@pytest.mark.parametrize("name", ["tailor", "envcraft"])
def test_headline_figures_equal_what_the_stage_files_say(
    site: Site, keys: dict[str, str], quickstart: Path, name: str
) -> None:
    got = figures(site.render(f"r/{keys[name]}/index.html"))
    want = truth(quickstart / name)
    assert set(want) <= set(got), set(want) - set(got)
    for key, value in want.items():
        assert float(got[key]) == pytest.approx(value, abs=1e-4), key


def test_headline_comes_before_the_funnel_and_the_field_plots(site: Site, keys: dict[str, str]) -> None:
    html = site.render(f"r/{keys['tailor']}/index.html")
    order = [html.index(s) for s in ("class=headline", "<svg class=funnel", "Fields of the kept records")]
    assert order == sorted(order)
    assert "3 model answers → <b>1</b> samples kept" in html
    # the reject reasons as bars, each bar's count the store's count of that stage and reason
    bars = dict(
        re.findall(r'<rect [^>]*data-label="([^"]+)" data-count="(\d+)"', html.split("Reject reasons")[1])
    )
    store = RunStore(site.runs[keys["tailor"]].root)
    want = Counter(f"{r['stage']}: {r['reason']}" for r in store.rejects())
    assert {k: int(v) for k, v in bars.items() if k in want} == dict(want)


def test_field_statistics_are_the_kept_records_values(
    site: Site, keys: dict[str, str], quickstart: Path
) -> None:
    run = site.runs[keys["tailor"]]
    samples = list(RunStore(quickstart / "tailor").records("samples"))
    st = run.index("samples").stats
    frames = st.summary("frames per sample")
    assert frames is not None and frames.n == len(samples)
    assert frames.max == max(len(s["provenance"]["frames"]) for s in samples)
    assert sum(c for _, _, c in frames.bins) == len(samples)
    assert st.cats["intent"] == Counter(s["intent"] for s in samples)
    html = site.render(f"r/{keys['tailor']}/index.html")
    assert 'data-stat="samples.frames per sample"' in html and 'data-stat="samples.intent"' in html
    tasks = site.runs[keys["envcraft"]].index("tasks").stats
    assert tasks.cats["environment"] == Counter(
        t["env"] for t in RunStore(quickstart / "envcraft").records("tasks")
    )


def test_statistics_follow_appends_and_never_count_a_torn_line(quickstart: Path, tmp_path: Path) -> None:
    root = quickstart / "tailor"
    site = open_site([root], tmp_path / "cache")
    (run,) = site.runs.values()
    sample = json.loads((root / "samples.jsonl").read_text().splitlines()[0])
    more = {**sample, "id": sample["id"] + "-b", "intent": "gui_next_action"}
    with (root / "samples.jsonl").open("a") as fh:
        fh.write(json.dumps(more) + "\n")
        fh.write(json.dumps({**sample, "id": "torn"})[:40])  # a crash mid-line
    got = figures(site.render("r/0/index.html"))
    assert got["tailor_run.kept"] == "2"
    assert run.index("samples").stats.cats["intent"] == Counter([sample["intent"], "gui_next_action"])
    assert run.index("samples").stats.summary("frames per sample").n == 2


def test_partial_rewards_count_in_the_mean_and_never_as_a_pass(tmp_path: Path) -> None:
    """Gaming the pass rate: a near-full or partial reward, a failed trial, are not passes."""
    rewards = {"t1": [1.0, 0.99], "t2": [0.5, 0.0], "t3": [1.0, 1.0]}
    with RunStore(tmp_path / "r") as store:
        for task, rs in rewards.items():
            for i, r in enumerate(rs):
                store.stage("rollouts").append(
                    {"id": f"{task}/rollout-{i}", "task_id": task, "reward": r, "model": "m", "usage": {}}
                )
    site = open_site([tmp_path / "r"], tmp_path / "cache")
    got = figures(site.render("index.html"))
    assert got["rollouts.kept"] == "3" and float(got["rollouts.pass_rate"]) == pytest.approx(0.5)
    assert float(got["rollouts.mean_reward"]) == pytest.approx(4.49 / 6)
    # pass^1 = mean over tasks of successes/trials; pass^2 = only t3 has both trials full
    assert float(got["rollouts.pass_hat_1"]) == pytest.approx((0.5 + 0 + 1) / 3, abs=1e-4)
    assert float(got["rollouts.pass_hat_2"]) == pytest.approx(1 / 3, abs=1e-4)


def test_a_floor_environment_is_not_counted_as_passing(tmp_path: Path) -> None:
    with RunStore(tmp_path / "LIB") as store:
        for name, status in [("a", "passing"), ("b", "floor"), ("c", "failed")]:
            store.stage("index").append({"id": name, "status": status, "category": "x", "tools": 3})
    got = figures(open_site([tmp_path / "LIB"], tmp_path / "cache").render("index.html"))
    assert got["library.kept"] == "1" and got["library.floor"] == "1" and got["library.failed"] == "1"
    assert float(got["library.pass_rate"]) == pytest.approx(1 / 3)


def test_the_overview_names_the_commands_that_wrote_the_run(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r") as store:
        store.stage("chains").append({"id": "c1", "env": "e", "steps": ["a", "b"]})
        store.update_manifest(chains={"n": 1})
        store.update_manifest(chains={"n": 1})  # the same process: recorded once
    man = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert [c["command"] for c in man["commands"]] == [lock._command()]
    html = open_site([tmp_path / "r"], tmp_path / "cache").render("index.html")
    assert f"<code>{lock._command()}</code>" in html.replace("&#x27;", "'")
    assert figures(html)["chains.kept"] == "1"


def test_runs_side_by_side_mark_the_figures_that_differ(quickstart: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(quickstart / "tailor", a)
    shutil.copytree(quickstart / "tailor", b)
    sample = json.loads((b / "samples.jsonl").read_text().splitlines()[0])
    with (b / "samples.jsonl").open("a") as fh:
        fh.write(json.dumps({**sample, "id": sample["id"] + "-b"}) + "\n")
    site = open_site([a, b], tmp_path / "cache")
    for html in (site.render("index.html"), site.render("compare.html")):
        rows = dict(re.findall(r'<tr data-figure="([\w.]+)">(.*?)</tr>', html))
        assert "class=diff" in rows["tailor_run.kept"] and "class=diff" in rows["tailor_run.yield"]
        assert "class=diff" not in rows["tailor_run.inputs"] and "class=diff" not in rows["run.rejects"]
        assert ">1<" in rows["tailor_run.kept"] and ">2<" in rows["tailor_run.kept"]
        # the kept samples' fields too: the added sample has the same shape, so frames per sample agree
        assert "class=diff" not in rows["fields.samples.frames_per_sample"]
        assert "describe_current_subtask (100%)" in rows["fields.samples.intent"]


def test_tool_graph_labels_fit_inside_the_drawing() -> None:
    names = [f"tool_with_a_rather_long_name_{i}" for i in range(9)]
    svg = graph_svg([(n, "read") for n in names], [(names[0], names[1], 1)])
    x0, _, w, _ = (float(v) for v in re.search(r'viewBox="([^"]+)"', svg).group(1).split())
    for x, anchor, text in re.findall(r'<text x="([-\d.]+)" y="[-\d.]+" text-anchor=(\w+)>([^<]+)<', svg):
        width = LABEL_CHAR_W * len(text)
        left, right = (float(x) - width, float(x)) if anchor == "end" else (float(x), float(x) + width)
        assert x0 <= left and right <= x0 + w, (text, left, right, x0, w)


def test_an_ingest_run_counts_inputs_read_against_streams_kept(quickstart: Path, tmp_path: Path) -> None:
    """``tailor ingest`` alone: its input files are the streams it kept plus the ingest rejects."""
    root = tmp_path / "ingest"
    shutil.copytree(quickstart / "tailor", root)
    for stage in ("responses", "validated", "materialize", "samples", "artifacts"):
        (root / f"{stage}.jsonl").unlink()
    store = RunStore(root)
    failed = sum(1 for r in store.rejects() if r["stage"] == "ingest")
    streams = sum(1 for _ in store.records("streams"))
    got = figures(open_site([root], tmp_path / "cache").render("index.html"))
    assert "tailor_run.kept" not in got
    assert got["tailor_ingest.inputs"] == str(streams + failed) and got["tailor_ingest.kept"] == str(streams)
    assert float(got["tailor_ingest.yield"]) == pytest.approx(streams / (streams + failed))
    assert got["tailor_ingest.candidates"] == str(sum(1 for _ in store.records("candidates")))


def test_a_rerun_with_another_producer_is_counted_afresh(tmp_path: Path) -> None:
    """A live viewer must not keep counting records a rerun superseded (another producer)."""
    root = tmp_path / "r"
    with RunStore(root) as store:
        store.set_producer("tasks", {"v": 1})
        for i in range(3):
            store.stage("tasks").append({"id": f"t{i}", "env": "old", "gold_chain": []})
    site = open_site([root], tmp_path / "cache")
    assert figures(site.render("index.html"))["tasks.kept"] == "3"
    with RunStore(root) as store:
        store.set_producer("tasks", {"v": 2})
        store.stage("tasks").append({"id": "t0", "env": "new", "gold_chain": [{"tool": "a"}]})
    got = figures(site.render("index.html"))
    assert got["tasks.kept"] == "1" == str(sum(1 for _ in RunStore(root).records("tasks")))
    assert got["tasks.environments"] == "1" and float(got["tasks.tools_per_task"]) == 1.0


@pytest.mark.parametrize("name", ["tailor", "envcraft"])
def test_funnel_stage_table_and_usage_equal_the_stage_files(
    site: Site, keys: dict[str, str], quickstart: Path, name: str
) -> None:
    html = site.render(f"r/{keys[name]}/index.html")
    store = RunStore(quickstart / name)
    stages = [p.stem for p in (quickstart / name).glob("*.jsonl") if p.stem != "rejects"]
    want = {s: sum(1 for _ in store.records(s)) for s in stages}
    bars = dict(
        re.findall(
            r"<rect [^>]*><title>([a-z_]+): (\d+)</title>",
            html.split("<svg class=funnel")[1].split("</svg>")[0],
        )
    )
    assert {s: int(n) for s, n in bars.items()} == want
    table = html.split('<table class="stages">')[1].split("</table>")[0]
    rows = re.findall(r"<tr><td><a [^>]*>([a-z_]+)</a></td><td>[^<]*</td><td>([\d,]+)</td>", table)
    assert {s: int(n.replace(",", "")) for s, n in rows} == want
    usage = html.split('<table class="usage">')[1].split("</table>")[0]
    if name == "envcraft":  # no ledger in the manifest: summed from the rollouts' own usage
        rollouts = list(store.records("rollouts"))
        prompt = sum(r["usage"]["prompt_tokens"] for r in rollouts)
        completion = sum(r["usage"]["completion_tokens"] for r in rollouts)
        assert f"<td>{len(rollouts)}</td>" in usage and f"<td>{prompt}</td><td>{completion}</td>" in usage
    else:
        ledger = store.manifest()["models"]["usage"]["by_model"]["local:smollm2-135m"]
        assert f"<td>{ledger['calls']}</td><td>{ledger['cache_hits']}</td>" in usage


def test_the_home_page_says_what_each_run_produced(site: Site, keys: dict[str, str]) -> None:
    """Not one "records" count mixing anchors, rejects and samples: each run's inputs → kept."""
    html = site.render("index.html")
    rows = dict(re.findall(r'<tr><td><a href="r/(\w+)/index.html">.*?</td><td>(.*?)</td>', html))
    assert rows[keys["tailor"]] == "3 model answers → <b>1</b> samples kept (33.3% yield)"
    envcraft = rows[keys["envcraft"]].split("<br>")
    assert envcraft == [
        "4 chains tried → <b>2</b> tasks kept (50.0% yield)",
        "4 rollouts → <b>0</b> full reward (0.0% pass rate)",
    ]


def test_samples_made_without_seeing_are_counted_on_the_headline(quickstart: Path, tmp_path: Path) -> None:
    """A sample answered from text alone, or with nothing to check its text against, is kept but said."""
    root = quickstart / "tailor"
    sample = json.loads((root / "samples.jsonl").read_text().splitlines()[0])
    site = open_site([root], tmp_path / "cache")
    assert figures(site.render("index.html"))["tailor_run.text_only"] == ""  # an older run: not recorded
    with (root / "samples.jsonl").open("a") as fh:
        for i, (evidence, grounding) in enumerate([("text_only", "unchecked"), ("perceived", "anchors")]):
            sent = {"images": 0 if evidence == "text_only" else 12, "frames": [], "bytes": 0}
            rec = {**sample, "id": f"{sample['id']}-{i}", "evidence": evidence, "grounding": grounding}
            rec["provenance"] = {**sample["provenance"], "sent": sent}
            fh.write(json.dumps(rec) + "\n")
    got = figures(site.render("index.html"))
    assert (
        got["tailor_run.kept"] == "3"
        and got["tailor_run.text_only"] == "1"
        and got["tailor_run.unchecked"] == "1"
    )
    assert site.runs["0"].index("samples").stats.summary("images sent").min == 0


def test_a_live_run_is_counted_while_pages_render_on_other_threads(quickstart: Path, tmp_path: Path) -> None:
    """The server answers on threads while a command appends: statistics stay whole and end exact."""
    import threading

    root = quickstart / "tailor"
    sample = json.loads((root / "samples.jsonl").read_text().splitlines()[0])
    site = open_site([root], tmp_path / "cache")
    errors: list[BaseException] = []

    def render() -> None:
        try:
            for _ in range(15):
                site.render("index.html")
        except BaseException as exc:  # noqa: BLE001 - collected, asserted below
            errors.append(exc)

    readers = [threading.Thread(target=render) for _ in range(2)]
    for t in readers:
        t.start()
    with (root / "samples.jsonl").open("a") as fh:
        for i in range(300):
            fh.write(json.dumps({**sample, "id": f"{sample['id']}-{i}"}) + "\n")
            fh.flush()
    for t in readers:
        t.join()
    assert errors == []
    got = figures(site.render("index.html"))
    assert got["tailor_run.kept"] == "301" == str(sum(1 for _ in RunStore(root).records("samples")))
    assert site.runs["0"].index("samples").stats.summary("frames per sample").n == 301


def test_invalid_tool_calls_lower_the_validity(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r") as store:
        for i, (calls, invalid) in enumerate([(4, 1), (0, 0), (4, 0)]):
            metrics = {"tool_calls": calls, "invalid_calls": invalid}
            rec = {"id": f"t/rollout-{i}", "task_id": "t", "reward": 0.0, "turns": 2, "metrics": metrics}
            store.stage("rollouts").append(rec)
    got = figures(open_site([tmp_path / "r"], tmp_path / "cache").render("index.html"))
    assert float(got["rollouts.valid_calls"]) == pytest.approx(7 / 8)
    assert float(got["rollouts.turns"]) == 2.0


def test_a_large_index_is_kept_out_of_the_cyclic_gc(tmp_path: Path) -> None:
    """A scan that indexes FREEZE_AFTER records or more freezes what the process holds, so a full GC
    collection no longer walks the index on a page request (bench_viewer: one switch in a hundred took
    ~120 ms before, under 70 ms after); a small index leaves the GC alone."""
    import gc

    from dataclaw.viewer.index import FREEZE_AFTER, LineIndex

    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_text("".join(json.dumps({"id": f"s{i}"}) + "\n" for i in range(10)))
    large.write_text("".join(json.dumps({"id": f"r{i}"}) + "\n" for i in range(FREEZE_AFTER)))
    gc.unfreeze()
    try:
        LineIndex(small).refresh()
        assert gc.get_freeze_count() == 0
        index = LineIndex(large, facet_fn=lambda rec: {"id": rec["id"]})
        index.refresh()
        assert len(index) == FREEZE_AFTER and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
