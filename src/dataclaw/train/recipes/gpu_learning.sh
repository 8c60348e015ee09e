#!/usr/bin/env bash
# The learning loop at the paper's scale (EnvCraft §5, Table 17 / D.1): verified tool tasks split by
# environment and seed, GRPO with VERL on a Qwen3-8B policy over the train split, the policy before and
# after on the held-out splits with `dataclaw tasks rollout` (pass^k over -n trials). A script a user runs
# on their cluster; dataclaw's CI never runs it (see docs/training.md, "The learning loop at scale").
#
#   TEXT_MODEL='http://gpu01:8000/v1::Qwen/Qwen3-32B?server=vllm' POLICY=Qwen/Qwen3-8B NGPUS=8 \
#     bash src/dataclaw/train/recipes/gpu_learning.sh runs/learning
#
# Needs: dataclaw with a VERL venv (`make verl-setup`, VERL 0.9 + vLLM with CUDA), vLLM to serve the
# policy for evaluation, and an OpenAI-compatible model for the tasks' text (TEXT_MODEL; a strong open
# model, as the paper's synthesis uses).
set -euo pipefail

OUT=${1:-runs/learning}
POLICY=${POLICY:-Qwen/Qwen3-8B}
TEXT_MODEL=${TEXT_MODEL:?set TEXT_MODEL to an OpenAI-compatible model string for the tasks text}
NGPUS=${NGPUS:-8}
NNODES=${NNODES:-1}
TP=${TP:-4}
TRAIN_ENVS=${TRAIN_ENVS:-"temporal_scheduling transactional_workspace state_machine workflow_orchestration bilateral_matching event_triggering stream_processing"}
HELDOUT_ENVS=${HELDOUT_ENVS:-"human_agent_interaction cross_tool_pipeline"}
CHAINS=${CHAINS:-1200}      # per train environment: ~8k tasks after grounding and text checks (D.2)
HELDOUT=${HELDOUT:-60}      # per environment, held-out seed
K=${K:-4}                   # trials per held-out task (pass^k)
DC=${DATACLAW:-.venv/bin/dataclaw}
VERL_PY=${VERL_PYTHON:-.venv-verl/bin/python}

envs() { for e in $1; do printf -- '--env %s ' "$e"; done; }

# 1. tasks: train seed 0, held-out seed 1000 (same environments), held-out environments never trained on
$DC tasks sample -o "$OUT/train" $(envs "$TRAIN_ENVS") -n "$CHAINS" --seed 0 --max-len 6
$DC tasks sample -o "$OUT/same_env" $(envs "$TRAIN_ENVS") -n "$HELDOUT" --seed 1000 --max-len 6
$DC tasks sample -o "$OUT/unseen_env" $(envs "$HELDOUT_ENVS") -n "$HELDOUT" --seed 1000 --max-len 6
for split in train same_env unseen_env; do
  $DC tasks synth -r "$OUT/$split" --model "$TEXT_MODEL" --workers "$(nproc)"
done
# a held-out task whose gold chain a train task has is not held out
"${DC%/dataclaw}/python" - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
key = lambda r: json.dumps([[c["tool"], c["params"]] for c in r["gold_chain"]], sort_keys=True, default=str)
train = {key(json.loads(l)) for l in (out / "train/tasks.jsonl").read_text().splitlines() if l.strip()}
rows = [l for l in (out / "same_env/tasks.jsonl").read_text().splitlines() if l.strip()]
kept = [l for l in rows if key(json.loads(l)) not in train]
(out / "same_env/heldout.jsonl").write_text("".join(l + "\n" for l in kept))
print(f"same_env: {len(kept)} of {len(rows)} held-out tasks unseen in train")
PY
cp "$OUT/unseen_env/tasks.jsonl" "$OUT/unseen_env/heldout.jsonl"

# 2. GRPO with VERL, the paper's hyper-parameters (Table 17): one export per environment, trained in turn
#    (a VERL tool config serves one environment group)
CKPT=$POLICY
for env in $TRAIN_ENVS; do
  $DC tasks export "$OUT/train/tasks.jsonl" --to verl --env "$env" -o "$OUT/verl/$env"
  PYTHONPATH="$OUT/verl/$env" $VERL_PY -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \
    data.train_files="$OUT/verl/$env/train.parquet" data.val_files="$OUT/verl/$env/train.parquet" \
    data.return_raw_chat=True data.train_batch_size=64 data.max_prompt_length=4096 \
    data.max_response_length=32768 \
    actor_rollout_ref.model.path="$CKPT" actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=1e-6 actor_rollout_ref.actor.optim.weight_decay=0.01 \
    actor_rollout_ref.actor.grad_clip=1.0 actor_rollout_ref.actor.clip_ratio=0.2 \
    actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.kl_loss_coef=0.02 \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode=async \
    actor_rollout_ref.rollout.n=8 actor_rollout_ref.rollout.temperature=1.0 actor_rollout_ref.rollout.top_p=1.0 \
    actor_rollout_ref.rollout.tensor_model_parallel_size="$TP" \
    actor_rollout_ref.rollout.multi_turn.enable=True \
    actor_rollout_ref.rollout.multi_turn.max_assistant_turns=32 \
    actor_rollout_ref.rollout.multi_turn.tool_config_path="$OUT/verl/$env/tool_config.yaml" \
    actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent \
    custom_reward_function.path="$OUT/verl/$env/reward.py" custom_reward_function.name=compute_score \
    trainer.total_epochs=1 trainer.n_gpus_per_node="$NGPUS" trainer.nnodes="$NNODES" \
    trainer.default_local_dir="$OUT/ckpt/$env" trainer.logger='[console]'
  step=$(cat "$OUT/ckpt/$env/latest_checkpointed_iteration.txt")
  $VERL_PY -m verl.model_merger merge --backend fsdp \
    --local_dir "$OUT/ckpt/$env/global_step_$step/actor" --target_dir "$OUT/ckpt/$env/hf"
  CKPT="$OUT/ckpt/$env/hf"
done

# 3. before and after on the held-out splits: the same server (vLLM, hermes tool parser), budgets, seeds
evaluate() {  # $1 label, $2 checkpoint
  $VERL_PY -m vllm.entrypoints.openai.api_server --model "$2" --served-model-name policy \
    --tensor-parallel-size "$TP" --enable-auto-tool-choice --tool-call-parser hermes --port 8011 &
  local pid=$!
  until curl -sf localhost:8011/v1/models >/dev/null; do sleep 5; done
  for split in same_env unseen_env; do
    $DC tasks rollout "$OUT/$split/heldout.jsonl" -o "$OUT/eval/$split-$1" \
      --model 'http://localhost:8011/v1::policy?server=vllm&concurrency=64' -n "$K" \
      --temperature 1.0 --seed 0 --max-turns 32 --timeout 300 --concurrency 64
  done
  kill "$pid"; wait "$pid" || true
}
evaluate before "$POLICY"
evaluate after "$CKPT"
echo "rollout tables above; per-split records in $OUT/eval/*/rollouts.jsonl (view: dataclaw view $OUT/eval/*)"
