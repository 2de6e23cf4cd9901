# The two set-up commands of the README: `make demo` and `make test`.
# Both create .venv if missing and install everything, torch 2.13.0 (the CPU wheel) first,
# so that nothing that depends on torch pulls a CUDA build.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.crossknow-installed
PYTEST_ARGS ?=
# llama-cpp-python (the test server) compiles from source. Built for the host CPU (GGML_NATIVE) it
# uses AMX tile instructions wherever the CPU lists them, and on these VMs, whose kernel does not
# enable AMX state, its first matrix multiply dies of a general protection fault (ldtilecfg). Build
# it for AVX2 instead: portable, and fast enough for the tests.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: install demo test bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q -e '.[all,test]'
	touch $(STAMP)

demo: install
	$(VENV)/bin/crossknow demo --out runs/demo

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

# The pipeline bench (crossknow evaluate/trace against lm-eval and the machine's matmul floor, about
# 10 minutes on 2 cores; --quick for fewer items), then the batched-generation bench once it exists.
bench: install
	$(PY) bench/pipeline_bench.py
	if [ -f bench/generation_bench.py ]; then $(PY) bench/generation_bench.py; fi

clean:
	rm -rf runs/demo
