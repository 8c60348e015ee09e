#!/usr/bin/env bash
# Short device check of the learning loop (issue 30) for a machine with one accelerator: the learning
# benchmark at its full size with SFT and the policy servers on the GPU (the tasks, rollouts and
# verifiers stay on the CPU). Budget: under 10 minutes on one H200. Writes its JSON line and the run
# folder under $OUT (default /tmp/device-check).
#
#   bash src/dataclaw/train/recipes/device_check.sh
set -euo pipefail
OUT=${OUT:-/tmp/device-check}
PY=${DATACLAW_TRAIN_PYTHON:-.venv-train/bin/python}
mkdir -p "$OUT"
if ! "$PY" -c 'import torch, trl, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "device check: no CUDA-enabled torch with TRL at $PY (set DATACLAW_TRAIN_PYTHON)" >&2
  exit 2
fi
"$PY" -c 'import torch; print("device:", torch.cuda.get_device_name(0))'
timeout 540 .venv/bin/python benchmarks/bench_learning.py --device auto --out "$OUT/loop" \
  2> "$OUT/loop.log" | tee "$OUT/bench_learning.json"
