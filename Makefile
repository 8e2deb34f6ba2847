# One-command set-up on a fresh machine: `make demo` and `make test` create .venv,
# install what they need (pinned in pyproject.toml) and run.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
DEMO_STAMP := $(VENV)/.demo-installed
TEST_STAMP := $(VENV)/.test-installed

.PHONY: demo test lint typecheck bench clean slurm

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (schedmate needs Python 3.11)"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch is pinned to the CPU build (2.13.0); an unpinned torch pulls several GB of CUDA.
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[embed]"
	touch $@

# llama-cpp-python compiles llama.cpp once (5-7 min on 2 cores) into a wheelhouse outside the
# clone. A portable AVX2 build: the default native build segfaults on CPUs with AMX (seen on this
# kind of VM: any prompt longer than one token crashed the server).
LLAMA_VERSION := 0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
WHEELHOUSE ?= $(HOME)/.cache/schedmate/wheels/llama-$(LLAMA_VERSION)-avx2

$(WHEELHOUSE)/.built: | $(BIN)/python
	mkdir -p $(WHEELHOUSE)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip wheel -q --no-deps --no-cache-dir -w $(WHEELHOUSE) llama-cpp-python==$(LLAMA_VERSION)
	touch $@

$(TEST_STAMP): pyproject.toml $(WHEELHOUSE)/.built | $(BIN)/python
	$(BIN)/pip install -q --find-links $(WHEELHOUSE) -e ".[embed,llm-server,dev,postgres,watch]"
	touch $@ $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/schedmate demo

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

# CI runs `make lint typecheck` before the tests (.ci/run).
lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

bench: $(TEST_STAMP)
	$(BIN)/python bench/tracker.py
	$(BIN)/python bench/failures.py
	$(BIN)/python bench/sim.py
	$(BIN)/python bench/advisor.py
	$(BIN)/python bench/whatif.py
	$(BIN)/python bench/watch.py

# A real single-node Slurm (slurm-wlm + munge, fake GPUs) for the integration tests; needs root.
# Prints SLURM_CONF=...; the tests also find it at /var/lib/schedmate-ci/slurm/slurm.conf.
slurm:
	bash .ci/provision_slurm.sh

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .ruff_cache .mypy_cache
