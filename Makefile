# Quick start: `make demo` runs the scheduler on the quickstart scenario; `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test e2e e2e-real lint bench clean

$(BIN)/kai: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[sim]'
	touch $(BIN)/kai

$(VENV)/.dev: $(BIN)/kai
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(VENV)/.dev

demo: $(BIN)/kai
	$(BIN)/kai schedule examples/quickstart.yaml --cycles 2
	$(BIN)/kai simulate examples/simulate-quickstart.yaml --no-progress

# The unit suite includes tests/kube (a real kube-apiserver from ../shared/kube, one per pytest worker). The e2e
# suite runs over the mock API server (faults a real server cannot show), then over a real kube-apiserver twice:
# bare and with kube-controller-manager (tests/e2e/run_real.py; it says why and skips without ../shared/kube).
test: $(VENV)/.dev
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -n 2
	KAI_E2E_MOCK=1 $(BIN)/pytest tests/e2e
	$(BIN)/python -m tests.e2e.run_real

e2e: $(VENV)/.dev          # against a cluster of yours: KAI_E2E_KUBECONFIG=path (see tests/e2e/README.md)
	$(BIN)/pytest tests/e2e -v

e2e-real: $(VENV)/.dev     # against fresh loopback clusters from ../shared/kube, bare and with controllers
	$(BIN)/python -m tests.e2e.run_real -v

bench: $(BIN)/kai
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# The report test renders the HTML in a real headless Chromium: Debian's chromium and chromedriver, installed
# here when missing and we are root (as in CI); otherwise that test is skipped and this says how to get them.
.PHONY: browser
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium and chromium-driver (apt-get)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) \
			>/dev/null || { echo "apt-get could not install chromium" >&2; exit 1; }; \
	else echo "no chromium: the browser test of the report is skipped (apt-get install chromium chromium-driver)"; fi

test: browser
