# rlhub: `make demo` runs the main job on the embedded defaults; `make test` runs the test suite.
# Both create .venv in the project root and install rlhub plus every first-party plugin.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The CPU build of torch; installed first so that nothing pulls a CUDA build of several GB.
TORCH  ?= torch==2.13.0
PLUGINS := $(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml))
STAMP  := $(VENV)/.installed
# OpenEnv's own client and server framework, for the bridge tests: openenv 0.10 and verifiers 0.4
# (rlhub-verifiers) pin different mcp versions, so OpenEnv gets a virtualenv of its own.
OPENENV_VENV := .venv-openenv
OPENENV ?= openenv==0.10.0

.PHONY: setup demo test test-slow bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml $(wildcard plugins/*/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -e ".[all]" $(addprefix -e ,$(PLUGINS))
	# OpenRLHF cannot install its GPU stack here; its client code is all the tests drive.
	$(BIN)/pip install -q --no-deps "openrlhf==0.11.2"
	# gem-llm pins reasoning-gym==0.1.23 against rlhub-reasoning-gym's 0.1.25; the games that
	# plugins/gem bridges need neither pin (see plugins/gem/pyproject.toml).
	$(BIN)/pip install -q --no-deps "gem-llm==0.1.0"
	# uv: verifiers' harnesses run their chat program through `uv sync --script` (vf-eval test).
	$(BIN)/pip install -q "uv>=0.5"
	test -x $(OPENENV_VENV)/bin/python || $(PYTHON) -m venv $(OPENENV_VENV)
	$(OPENENV_VENV)/bin/pip install -q "$(OPENENV)"
	touch $(STAMP)

# `rlhub train` prints its summary and renders the training run's report (runs/demo/report/);
# `rlhub report` renders the eval's, which `rlhub eval` wrote inside the run folder.
demo: setup
	rm -rf runs/demo  # the demo's own run folder, made anew each time
	$(BIN)/rlhub train examples/demo.yaml --out runs/demo
	$(BIN)/rlhub eval --mixture examples/demo.yaml --policy hf:runs/demo/model -n 16 --out runs/demo/eval
	$(BIN)/rlhub report runs/demo/eval
	@echo "training report: runs/demo/report/index.html"
	@echo "eval report:     runs/demo/eval/report/index.html"

test: setup
	RLHUB_MATH_SEEDS=20 $(BIN)/pytest -q -n 3 --dist loadgroup -m "not slow"

# The tests marked slow (whole families of which `make test` keeps a fast sample).
test-slow: setup
	$(BIN)/pytest -q -n 3 --dist loadgroup -m slow

bench: setup
	for b in discovery verifiers sandbox server scheduler dataset_memory demo; do $(BIN)/python bench/$$b.py > /dev/null || exit 1; done
	$(BIN)/python bench/render.py

clean:
	rm -rf $(VENV) $(OPENENV_VENV) runs
