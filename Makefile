# The two set-up commands of the README: `make demo` and `make test`.
# Both create .venv if missing and install everything, torch 2.13.0 (the CPU wheel) first,
# so that nothing that depends on torch pulls a CUDA build.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.crossknow-installed
PYTEST_ARGS ?=

.PHONY: install demo test bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[all,test]'
	touch $(STAMP)

demo: install
	$(VENV)/bin/crossknow demo --out runs/demo

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

bench: install
	$(PY) bench/score_bench.py

clean:
	rm -rf runs/demo
