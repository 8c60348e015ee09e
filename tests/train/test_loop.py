"""``dataclaw train loop``: tasks split by environment and seed, gold trajectories as the agent lives them,
the served policy's tool-call parsing, the figures, and (slow, in ``.venv-train``) the whole loop wired
end to end on a tiny run (10 train chains, one SFT step, both policies served and rolled out)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from dataclaw.cli._train_loop import (
    DONE_REPLY,
    LoopConfig,
    chain_key,
    figures,
    gold_conversation,
    make_tasks,
    split_tasks,
    template_instruction,
)
from dataclaw.envcraft.tasks.tool.stages import replay_task
from dataclaw.envcraft.tasks.tool.synth import check_text, classify
from dataclaw.train.loop import COMPACT_TOOL_TEMPLATE, learning_curve, write_sft_rows
from dataclaw.train.trainer import policy_path

REPO = Path(__file__).resolve().parents[2]
TRAIN_PY = Path(os.environ.get("DATACLAW_TRAIN_PYTHON", REPO / ".venv-train" / "bin" / "python"))
needs_trl = pytest.mark.skipif(
    not TRAIN_PY.is_file(), reason=f"no trainer venv at {TRAIN_PY}: `make train-setup` builds it"
)


def _serve_module():
    spec = importlib.util.spec_from_file_location(
        "serve_policy", REPO / "src/dataclaw/train/recipes/serve_policy.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    cfg = LoopConfig(
        out=tmp_path_factory.mktemp("loop"),
        train_envs=["temporal_scheduling"],
        heldout_envs=["state_machine"],
        chains_per_env=5,
        heldout_per_env=4,
        max_len=3,
    )
    return split_tasks(cfg)


def test_splits_are_disjoint_by_chain_and_by_environment(splits):
    train, same, unseen = splits["train"], splits["same_env"], splits["unseen_env"]
    assert train.tasks and same.tasks and unseen.tasks
    assert {t.env for t in train.tasks} == {t.env for t in same.tasks} == {"temporal_scheduling"}
    assert {t.env for t in unseen.tasks} == {"state_machine"}
    assert not {chain_key(t) for t in train.tasks} & {chain_key(t) for t in same.tasks}
    # the held-out split of the same environments was sampled with another seed: a chain both seeds drew
    # is counted, not kept
    assert same.made["grounded"] == len(same.tasks) + same.made["in_train"] + same.made.get("text_leaks", 0)
    for t in train.tasks:  # one user turn: the composite request
        assert t.user_turns == [t.instruction]


def test_template_request_states_every_user_value_and_leaks_no_looked_up_one(tmp_path):
    split = make_tasks(tmp_path / "t", ["transactional_workspace"], 6, 3, 2, 4)
    from dataclaw.core.store import RunStore

    with RunStore(tmp_path / "t") as store:
        grounded = list(store.records("grounded"))
    assert grounded
    for g in grounded:
        text = template_instruction(g)
        if text is None:
            continue
        user, derived = classify(g["steps"])
        missing, leaked = check_text([text], user, derived)
        assert missing == [] and leaked == [], (text, missing, leaked)
    assert len(split.tasks) == len(grounded) - split.made.get("text_leaks", 0)


def test_gold_conversation_is_the_episode_the_agent_would_see_and_scores_one(splits):
    task = splits["train"].tasks[0]
    conv = gold_conversation(task)
    assert conv is not None
    msgs = conv["messages"]
    assert msgs[0]["role"] == "system" and msgs[1] == {"role": "user", "content": task.instruction}
    calls = [m for m in msgs if m.get("tool_calls")]
    results = [m for m in msgs if m["role"] == "tool"]
    assert [c["tool_calls"][0]["function"]["name"] for c in calls] == [s["tool"] for s in task.gold_chain]
    assert len(results) == len(task.gold_chain)
    assert all(json.loads(r["content"])["status"] == "ok" for r in results)  # what the environment returned
    assert msgs[-1] == {"role": "assistant", "content": DONE_REPLY}
    names = {t["function"]["name"] for t in conv["tools"]}
    assert {s["tool"] for s in task.gold_chain} <= names


def test_a_chain_that_does_not_solve_its_task_is_no_training_trajectory(splits):
    task = next(t for t in splits["train"].tasks if len(t.gold_chain) >= 2)
    cut = task.model_copy(update={"gold_chain": task.gold_chain[:-1]})
    assert replay_task(cut)["score"] < 1.0
    assert gold_conversation(cut) is None
    nothing = task.model_copy(update={"gold_chain": []})
    assert gold_conversation(nothing) is None


def test_sft_rows_keep_tools_as_one_json_string(tmp_path, splits):
    conv = gold_conversation(splits["train"].tasks[0])
    path = tmp_path / "sft.jsonl"
    assert write_sft_rows(path, [conv, conv]) == 2
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert json.loads(rows[0]["tools"]) == conv["tools"] and rows[0]["messages"] == conv["messages"]


def test_served_answers_become_openai_tool_calls_and_broken_ones_stay_visible():
    tool_calls_of = _serve_module().tool_calls_of
    text, calls = tool_calls_of(
        '<tool_call>\n{"name": "get_event", "arguments": {"event_id": "E-1"}}\n</tool_call>'
    )
    assert text is None
    assert calls[0]["function"] == {"name": "get_event", "arguments": '{"event_id": "E-1"}'}
    text, calls = tool_calls_of("All done, nothing to call.")
    assert text == "All done, nothing to call." and calls == []
    # a malformed block is passed on (the rollout counts an invalid call) rather than dropped
    _, calls = tool_calls_of('<tool_call>{"name": "get_event", "arguments": {"event_id": </tool_call>')
    assert calls[0]["function"]["name"] == "unparsable_tool_call"
    # an answer cut off inside its call still shows the call it started
    _, calls = tool_calls_of('<tool_call>\n{"name": "list_conflicts", "arguments": {}}')
    assert calls[0]["function"]["name"] == "list_conflicts"


def _record(task, reward, calls=1, invalid=0, turns=2):
    return {
        "task_id": task,
        "reward": reward,
        "turns": turns,
        "metrics": {"tool_calls": calls, "invalid_calls": invalid},
    }


def test_figures_count_floors_apart_from_success():
    recs = [
        _record("a", 1.0),
        _record("a", 0.0),
        _record("b", 0.9999, calls=2, invalid=1),
        _record("b", 0.5, calls=0),
    ]
    fig = figures(recs)
    assert fig["mean_reward"] == round((1.0 + 0.0 + 0.9999 + 0.5) / 4, 4)
    assert fig["pass_hat_k"] == {1: 0.25, 2: 0.0}  # 0.9999 is not a success; a floor is no pass
    assert fig["tool_call_validity"] == 0.75 and fig["turns_per_task"] == 2.0
    assert figures([_record("a", 0.0, calls=0)])["tool_call_validity"] is None  # no call: no validity


def test_a_pass_counts_only_when_every_gold_write_was_made_and_accepted(splits):
    """A run the verifier scores 1.0 without one of the gold chain's writes (steps that cancel out, a write
    setting what a record already holds, a field the verifier does not see) is counted apart."""
    from dataclaw.cli._train_loop import made_every_write, writes_of

    task = next(t for t in splits["same_env"].tasks if len(t.gold_chain) >= 2)
    gold = [
        {"tool": c["tool"].replace(".", "__"), "arguments": dict(c["params"]), "ok": True}
        for c in task.gold_chain
    ]
    writes = set(writes_of(task))
    last = max(
        i
        for i, c in enumerate(task.gold_chain)
        if json.dumps([c["tool"], c["params"]], sort_keys=True, default=str) in writes
    )
    wrong_args = [dict(s) for s in gold]
    wrong_args[last]["arguments"] = {**wrong_args[last]["arguments"], "__extra": 1}
    refused = [dict(s) for s in gold]
    refused[last]["ok"] = False
    cases = {
        "every write": (gold, True),
        "a write missing": (gold[:last] + gold[last + 1 :], False),
        "other arguments": (wrong_args, False),
        "refused": (refused, False),
        "extra calls after": ([*gold, {**gold[0], "arguments": {}, "ok": False}], True),
    }
    for name, (steps, want) in cases.items():
        assert made_every_write({"steps": steps}, task) is want, name
    recs = [{**_record(task.id, 1.0), "steps": steps} for steps, _ in cases.values()]
    recs.append({**_record(task.id, 0.0), "steps": gold})  # every write, but the end state is wrong
    fig = figures(recs, {task.id: task})
    assert fig["pass_every_write"] == round(2 / 6, 4) and fig["mean_reward"] == round(5 / 6, 4)
    assert figures(recs)["pass_every_write"] is None  # without the tasks: not measured, not guessed


def test_learning_curve_reads_the_recipe_metrics(tmp_path):
    m = tmp_path / "metrics.jsonl"
    m.write_text('{"step": 1, "loss": 1.5}\n{"step": 2, "loss": 0.75, "grad_norm": 2}\n{"step": 2, "x": 1}\n')
    assert learning_curve(m, "loss") == [{"step": 1, "loss": 1.5}, {"step": 2, "loss": 0.75}]
    assert learning_curve(tmp_path / "none.jsonl", "loss") == []


def test_an_unseen_environment_that_is_also_trained_on_is_refused(tmp_path, capsys):
    from dataclaw.cli.app import _run

    code = _run(
        [
            "train",
            "loop",
            "-o",
            str(tmp_path / "x"),
            "--env",
            "state_machine",
            "--heldout-env",
            "state_machine",
        ]
    )
    assert code != 0
    assert "--heldout-env state_machine is also a train environment" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


PROBE = r"""
import json, sys
from transformers import AutoTokenizer
from dataclaw.train.checkpoint import plain_checkpoint
from dataclaw.train.trainer import default_cache_dir
tok = AutoTokenizer.from_pretrained(plain_checkpoint(sys.argv[3], default_cache_dir()))
tok.chat_template = open(sys.argv[1]).read()
conv = json.load(open(sys.argv[2]))
out = tok.apply_chat_template(conv["messages"], tools=conv["tools"], tokenize=True, return_dict=True,
                              return_assistant_tokens_mask=True)
ids, mask = out["input_ids"], out["assistant_masks"]
print(json.dumps({"text": tok.decode(ids), "assistant": tok.decode([t for t, m in zip(ids, mask) if m])}))
"""


@pytest.mark.slow
@needs_trl
def test_loop_template_renders_calls_results_and_masks_only_the_assistant(tmp_path, splits):
    conv = gold_conversation(splits["train"].tasks[0])
    (tmp_path / "conv.json").write_text(json.dumps(conv))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    gguf = policy_path("smollm2-135m")
    done = subprocess.run(
        [str(TRAIN_PY), "-c", PROBE, str(COMPACT_TOOL_TEMPLATE), str(tmp_path / "conv.json"), str(gguf)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for tool in conv["tools"]:  # every tool offered, one line each
        assert f"- {tool['function']['name']}(" in out["text"]
    for m in conv["messages"]:
        if m["role"] == "tool":
            assert m["content"] in out["text"] and m["content"] not in out["assistant"]
    first = conv["messages"][2]["tool_calls"][0]["function"]
    assert f'{{"name": "{first["name"]}", "arguments": {json.dumps(first["arguments"])}}}' in out["assistant"]
    assert out["assistant"].endswith(DONE_REPLY + "<|im_end|>")
    assert conv["messages"][1]["content"] not in out["assistant"]


CACHE_PROBE = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import serve_policy
from dataclaw.train.checkpoint import plain_checkpoint
from dataclaw.train.trainer import default_cache_dir
policy = serve_policy.Policy(plain_checkpoint(sys.argv[4], default_cache_dir()), "p", Path(sys.argv[2]))
conv = json.load(open(sys.argv[3]))
body = lambda k: {"messages": conv["messages"][:k], "tools": conv["tools"], "max_tokens": 6, "temperature": 0}
first = policy.complete(body(2))
kept = len(policy.cached)
second = policy.complete(body(4))  # the next turn: starts with the first request's tokens
policy.cache, policy.cached = None, []
fresh = policy.complete(body(4))
print(json.dumps({"kept": kept, "prompt": first["usage"]["prompt_tokens"],
                  "same": second["choices"] == fresh["choices"]}))
"""


@pytest.mark.slow
@needs_trl
def test_policy_server_reuses_the_shared_prefix_and_answers_as_without_it(tmp_path, splits):
    conv = gold_conversation(splits["train"].tasks[0])
    (tmp_path / "conv.json").write_text(json.dumps(conv))
    recipes = REPO / "src/dataclaw/train/recipes"
    done = subprocess.run(
        [str(TRAIN_PY), "-c", CACHE_PROBE, str(recipes), str(COMPACT_TOOL_TEMPLATE),
         str(tmp_path / "conv.json"), str(policy_path("smollm2-135m"))],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # the cache holds the first prompt and what was generated after it (all but the last token)
    assert out["kept"] >= out["prompt"]
    assert out["same"]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 195 s on 2 cores at load ~5; over 10 min at load 12
@needs_trl
def test_train_loop_runs_end_to_end_on_a_tiny_split(tmp_path, capsys):
    from dataclaw.cli.app import _run

    run = tmp_path / "loop"
    argv = ["train", "loop", "-o", str(run), "--env", "temporal_scheduling", "--heldout-env", "state_machine",
            "--chains", "10", "--heldout", "2", "--epochs", "0", "--sft-steps", "1", "--grad-accum", "1",
            "--max-length", "1024", "-n", "1", "--max-turns", "1", "--max-tokens", "12",
            "--train-python", str(TRAIN_PY)]  # fmt: skip
    code = _run(argv)
    output = capsys.readouterr()
    assert code == 0, output.out[-3000:] + output.err[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["splits"]["train"]["tasks"] >= 5 and summary["sft_trajectories"] >= 5
    assert summary["sft"]["steps"] == 1 and len(summary["sft_curve"]) == 1
    assert (run / "policy-sft" / "config.json").is_file()
    for split in ("same_env", "unseen_env"):
        for label in ("before", "after"):
            fig = summary["eval"][split][label]
            assert fig["rollouts"] == summary["splits"][split]["tasks"] and fig["errors"] == 0
            assert 1 in fig["pass_hat_k"] or "1" in fig["pass_hat_k"]
            assert 0.0 <= fig["pass_every_write"] <= fig["mean_reward"]
    assert "mean reward" in output.out and "passes making every gold write" in output.out
    # a rerun resumes: the same SFT data and settings reuse the saved policy, and its rollouts are read back
    lines = {p.parent.name: p.read_text() for p in (run / "eval").glob("*/rollouts.jsonl")}
    assert _run(argv) == 0
    assert "SFT: reusing" in capsys.readouterr().out
    again = json.loads((run / "summary.json").read_text())
    assert again["eval"] == summary["eval"]
    assert lines == {p.parent.name: p.read_text() for p in (run / "eval").glob("*/rollouts.jsonl")}


def test_an_sft_run_is_reused_only_for_the_same_command_on_the_same_files(tmp_path):
    from dataclaw.cli._train_loop import DONE_FILE, train_key, trained_before

    data, saved = tmp_path / "sft.jsonl", tmp_path / "policy"
    data.write_text('{"messages": []}\n')
    saved.mkdir()
    (saved / "config.json").write_text("{}")
    argv = ["python", "trl_sft.py", "--data", str(data), "--learning-rate", "0.0001"]
    (tmp_path / DONE_FILE).write_text(json.dumps({"key": train_key(argv), "summary": {"steps": 3}}))
    assert trained_before(tmp_path, saved, train_key(argv)) == {"steps": 3}
    assert trained_before(tmp_path, saved, train_key([*argv[:-1], "0.0002"])) is None  # other settings
    data.write_text('{"messages": [1]}\n')
    assert trained_before(tmp_path, saved, train_key(argv)) is None  # other data
    data.write_text('{"messages": []}\n')
    (saved / "config.json").unlink()
    assert trained_before(tmp_path, saved, train_key(argv)) is None  # the policy is gone


def test_novel_tasks_share_no_write_with_any_train_task(splits):
    from dataclaw.cli._train_loop import novel_tasks, writes_of

    train, same = splits["train"].tasks, splits["same_env"].tasks
    novel = novel_tasks(train, same)
    seen = {w for t in train for w in writes_of(t)}
    for t in same:
        assert writes_of(t)  # every kept task writes (a read-only one is gamed by doing nothing)
        assert (t.id in novel) == (not seen & set(writes_of(t)))
    assert novel_tasks(train, train) == set()


def test_an_empty_chain_length_range_is_refused(tmp_path, capsys):
    from dataclaw.cli.app import _run

    code = _run(["train", "loop", "-o", str(tmp_path / "x"), "--min-len", "3", "--max-len", "2"])
    assert code != 0
    assert "--min-len 3 --max-len 2" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
