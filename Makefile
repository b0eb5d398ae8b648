# The two set-up commands of the README: `make demo` and `make test` (both create .venv on first use).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PLUGINS := $(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml))
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint info clean

$(STAMP): pyproject.toml $(wildcard plugins/*/pyproject.toml) Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e . $(addprefix -e ,$(PLUGINS)) "pytest>=7" "pytest-xdist>=3" "hypothesis>=6" ruff wheel
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/coretorch demo

test: $(STAMP)
	$(PY) -m pytest -q -n auto  # one worker per core (pytest-xdist): 10.4k tests, ~6 min on 2 cores

bench: $(STAMP)
	$(PY) benchmarks/all.py
	$(PY) benchmarks/transformer.py  # GPT, LSTM and ResNet-style training steps (against PyTorch when installed)

lint: $(STAMP)
	$(VENV)/bin/ruff check coretorch plugins tests benchmarks examples

info: $(STAMP)
	$(VENV)/bin/coretorch info

clean:
	rm -rf $(VENV) build *.egg-info plugins/*/*.egg-info
