# Two commands from a fresh clone: `make demo` and `make test` (the fast tier; `make test-all`
# runs everything, as CI does).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# torch's CPU build: an unpinned torch from PyPI pulls a multi-GB CUDA build
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# two sets: what the demo runs (torch, the package, its runtime dependencies), and the tests' extras
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test
REPORT_STAMP := $(VENV)/.installed-report

.PHONY: demo lint test test-all bench report-demo clean checks-map

$(DEMO_STAMP): pyproject.toml requirements-demo.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "setuptools>=77"
	$(PY) -m pip install -q --no-deps --index-url $(TORCH_INDEX) -r requirements-demo.txt
	$(PY) -m pip install -q --no-build-isolation -e .  # also torch's own dependencies
	touch $@

$(TEST_STAMP): $(DEMO_STAMP) requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

demo: $(DEMO_STAMP)
	$(PY) examples/demo.py

lint: $(TEST_STAMP)
	$(PY) -m ruff check src tests bench examples
	$(PY) -m ruff format --check src tests bench examples

# the fast tier: every check's planted bug and healthy twin, the API, the CLI, the docs' examples
test: lint
	$(PY) -m pytest -q -m "not slow" -n auto --dist loadfile

# each declared check's planted and healthy tests, read from the tests' check markers
checks-map: $(TEST_STAMP)
	$(PY) -m labcoat.dev checks-map

# everything: adds the bug corpus, the long healthy loops, PostgreSQL, Chromium, Ray and the
# distributed tests (marked slow). pytest exits 5 when it ran no test, and make fails on it.
test-all: lint
	$(PY) -m pytest -q -n auto --dist loadfile

# the report gallery: the demo's set plus the extras it draws with (report) and audits with (audit)
$(REPORT_STAMP): $(DEMO_STAMP)
	$(PY) -m pip install -q --no-build-isolation -e ".[report,audit]"
	touch $@

report-demo: $(REPORT_STAMP)
	$(PY) examples/report_demo.py

bench: $(TEST_STAMP)
	for b in bench/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache reports
