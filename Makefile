# The two set-up commands of the README: `make demo` and `make test`.
# Both create .venv if missing and install from the committed lock (requirements/lock.txt): exact
# versions of every package, transitive ones included, each checked against its hashes. torch
# 2.13.0 (the CPU wheel) comes first and stays out of the lock (see requirements/torch-cpu.txt).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.crossknow-installed
LOCK := requirements/lock.txt
TORCH := torch==2.13.0
UV := uv==0.13.9
# Where `make lock` finds the CPU wheel of torch (on this machine kind: /opt/wheels).
TORCH_WHEELS ?= /opt/wheels
LATEST_VENV ?= .venv-latest
PYTEST_ARGS ?=
# llama-cpp-python (the test server) compiles from source. Built for the host CPU (GGML_NATIVE) it
# uses AMX tile instructions wherever the CPU lists them, and on these VMs, whose kernel does not
# enable AMX state, its first matrix multiply dies of a general protection fault (ldtilecfg). Build
# it for AVX2 instead: portable, and fast enough for the tests.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
# Fails when a CUDA build crept in (torch's CUDA wheels pull nvidia-* packages, gigabytes).
NO_CUDA = if $(1) -m pip list 2>/dev/null | grep -i '^nvidia-'; then echo 'CUDA packages installed: torch must be the CPU build' >&2; exit 1; fi

.PHONY: install vocab demo test test-fast test-nightly test-latest lock bench clean fuzz

install: $(STAMP)

$(STAMP): pyproject.toml $(LOCK)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q $(TORCH)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q --no-deps --require-hashes -r $(LOCK)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -m pip check
	$(call NO_CUDA,$(PY))
	touch $(STAMP)

# The real tokenizers of other model families (Llama 3, Llama 2, Qwen2, Phi-3) for the tests: llama.cpp's vocab-only
# GGUFs from the llama-cpp-python sdist of the lock (pip's cache holds it after the install; sha256 checked),
# converted once into .test-cache/vocab/ (about a minute). See tests/families/vocab.py.
VOCAB := .test-cache/vocab/.made

vocab: $(VOCAB)

$(VOCAB): $(STAMP) tests/families/vocab.py
	$(PY) -m tests.families.vocab
	touch $(VOCAB)

demo: install
	$(VENV)/bin/crossknow demo --out runs/demo

# The suite's tiers (tests/tiers.py). `make test`, what CI runs: every test but the nightly ones, the real
# embedded model and llama.cpp servers included. `make test-fast`: pure logic and in-process CLI tests, no model
# (loading it fails the test). `make test-nightly`: the end-to-end demos and long server runs.
FAST_TIER := not (model or server or training or slow or nightly or gpu)

test: install $(VOCAB)
	$(PY) -m pytest -m "not nightly" $(PYTEST_ARGS)

test-fast: install
	CROSSKNOW_TEST_TIER=fast $(PY) -m pytest -m "$(FAST_TIER)" $(PYTEST_ARGS)

test-nightly: install
	$(PY) -m pytest -m nightly $(PYTEST_ARGS)

# The newest releases of every dependency, without the lock, in a fresh environment of their own:
# run it before every `make lock`, and now and then, to find the next break before users do.
test-latest: $(VOCAB)
	rm -rf $(LATEST_VENV)
	python3 -m venv $(LATEST_VENV)
	$(LATEST_VENV)/bin/python -m pip install -q $(TORCH)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(LATEST_VENV)/bin/python -m pip install -q -e '.[all,llamacpp,test]'
	$(call NO_CUDA,$(LATEST_VENV)/bin/python)
	$(LATEST_VENV)/bin/python -m pip list --format=freeze | grep -iE '^(torch|transformers|accelerate|trl|lm.eval|llama.cpp.python|pydantic|numpy)=='
	$(LATEST_VENV)/bin/python -m pytest -m "not nightly" $(PYTEST_ARGS)

# Regenerate the lock from pyproject.toml with uv, resolving for Linux x86_64 and Python 3.11 (this
# project's machines), torch's requirements from its CPU wheel.
lock:
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q $(UV)
	$(VENV)/bin/uv pip compile pyproject.toml requirements/build.in --extra all --extra llamacpp --extra test \
		--python-version 3.11 --python-platform x86_64-manylinux_2_28 --generate-hashes \
		--find-links $(TORCH_WHEELS) --override requirements/torch-cpu.txt --no-emit-package torch \
		--custom-compile-command 'make lock' --output-file $(LOCK)
	if grep -iE '^(nvidia-|triton)' $(LOCK); then echo 'the lock holds CUDA packages' >&2; exit 1; fi

# The pipeline bench (crossknow evaluate/trace against lm-eval and the machine's matmul floor, about
# 10 minutes on 2 cores; --quick for fewer items), then the generation bench (the transformers and
# llama.cpp generators against llama-cpp-python's own loop, about 3 minutes).
# ADAXEVAL_RELEASE=DIR, the folder of the AdaXEval release's four files (docs/adaxeval.md says where they are):
# the bench also times a seeded sample of 100 items a file (runs/release-sample.jsonl) beside the paper examples.
ADAXEVAL_RELEASE ?=
RELEASE_FILES = $(foreach f,en_knowledge_memorization en_knowledge_generalization ja_knowledge_memorization \
	ja_knowledge_generalization,$(ADAXEVAL_RELEASE)/$(f).jsonl)

bench: install
	$(if $(ADAXEVAL_RELEASE),$(PY) bench/release_sample.py --out runs/release-sample.jsonl $(RELEASE_FILES))
	$(PY) bench/pipeline_bench.py $(if $(ADAXEVAL_RELEASE),--release-sample runs/release-sample.jsonl)
	$(PY) bench/generation_bench.py

clean:
	rm -rf runs/demo

# The fuzz suite (tests/fuzz) with 900 generated inputs per reader and per command: over 10,000 malformed files
# through the readers and over 200 through the command line, each refused or read as its mutation class expects;
# the counts per reader, command and class are printed at the end. Failing inputs are kept in
# tests/fuzz/regressions (commit them), which every normal test run replays. (The normal run has 20 per reader.)
FUZZ_EXAMPLES ?= 900
fuzz: install
	CROSSKNOW_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -p no:cacheprovider -q -m fuzz tests/fuzz
