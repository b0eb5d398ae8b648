# The two set-up commands of the README: `make demo` and `make test` (both create .venv on first use).
# Without make: pip install -e ".[demo,opt-einsum,test]" -e plugins/cpu_backend -e "plugins/opencl_backend[pocl]" ...
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PLUGINS := $(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml))
STAMP := $(VENV)/.installed
PLUGIN_REQS := $(filter-out plugins/opencl_backend,$(PLUGINS)) "plugins/opencl_backend[pocl]"
# the plugins' import packages (plugins/<dir>/coretorch_<name>), type-checked with the core by `make lint`
PLUGIN_PKGS := $(patsubst %/__init__.py,%,$(wildcard plugins/*/coretorch_*/__init__.py))

.PHONY: demo test bench lint info docs clean

# Editable installs of the core (with its demo, opt-einsum and test extras) and of every plugin; the OpenCL
# plugin with its pocl extra (PoCL, a CPU OpenCL device, so every machine has an 'opencl' device); ruff and mypy
# for `make lint`; setuptools and wheel for tests/test_packaging.py, which builds every distribution's sdist and wheel.
$(STAMP): pyproject.toml $(wildcard plugins/*/pyproject.toml) Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e ".[demo,opt-einsum,test]" $(addprefix -e ,$(PLUGIN_REQS)) ruff mypy "setuptools>=77" wheel
	touch $(STAMP)

demo: $(STAMP)  # the demo extra (progress bar, plot) is part of the install above
	$(VENV)/bin/coretorch demo

test: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadgroup  # one worker per core (pytest-xdist; xdist_group tests share one): 18.1k tests, ~6-8 min on 2 cores

bench: $(STAMP)
	$(PY) benchmarks/all.py
	$(PY) benchmarks/transformer.py  # GPT, LSTM and ResNet-style training steps (against PyTorch when installed)
	$(PY) benchmarks/compile.py  # coretorch.compile: MLP and GPT steps eager vs compiled (PyTorch from $$TORCH_PYTHON)

lint: $(STAMP)
	$(VENV)/bin/ruff check coretorch plugins tests benchmarks examples
	$(VENV)/bin/mypy coretorch $(PLUGIN_PKGS)  # with mypy's default checks (settings: pyproject.toml [tool.mypy])

# The API reference: docs/api/ is written from the public names (tools/gen_api_docs.py), then mkdocs builds the
# site into site/ with --strict (any warning fails the build).
$(VENV)/.docs-installed: $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e ".[docs]"
	touch $@

docs: $(VENV)/.docs-installed
	$(PY) tools/gen_api_docs.py
	$(VENV)/bin/mkdocs build --strict

info: $(STAMP)
	$(VENV)/bin/coretorch info

clean:
	rm -rf $(VENV) build site *.egg-info plugins/*/*.egg-info
