# memnest: `make run` to see it work, `make test` to check it.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
# The model that installs from PyPI and runs without network access (see README).
export MEMORY_EMBEDDING_MODEL ?= memnest/all-MiniLM-L6-v2-int8

.PHONY: install run test lint docs proto bench stop clean editors axe

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[offline,dev]"
	touch $@

run: install
	$(PY) examples/demo.py

# MEMNEST_EDITOR_CLIS=1: a test that drives a real editor CLI fails, not skips, without it.
# -n 2: two pytest-xdist workers, each with its own session daemon; --dist loadfile keeps a
# file's tests on one worker, so its module fixtures (a built wheel, a Claude Code session)
# are set up once. The tripwire (tests/tripwire.py) looks at the machine from the
# controller, before the workers start and after they end.
test: install lint docs editors axe chromium
	MEMNEST_EDITOR_CLIS=1 $(PY) -m pytest -n 2 --dist loadfile

# The manual in docs/ (mkdocs.yml), in strict mode: a broken link, anchor or a page left out of
# the nav fails it. site/ is git-ignored.
docs: install
	$(VENV)/bin/mkdocs build --strict --site-dir site

# The linter and the type checker over the daemon, the shims and the contract (generated
# files excluded, see pyproject.toml); `make test` runs them first. mypy reads the packages
# under the names they are imported by (memnest_daemon, ...: the names pyproject.toml's
# per-module settings use) through links in MYPY_PACKAGES, since the editable install maps
# them to their folders in a way mypy cannot follow.
MYPY_PACKAGES := $(VENV)/mypy-packages

lint: install
	$(VENV)/bin/ruff check daemon shims proto
	mkdir -p $(MYPY_PACKAGES)
	ln -sfn $(CURDIR)/daemon $(MYPY_PACKAGES)/memnest_daemon
	ln -sfn $(CURDIR)/shims $(MYPY_PACKAGES)/memnest_shims
	ln -sfn $(CURDIR)/proto $(MYPY_PACKAGES)/memnest_proto
	MYPYPATH=$(MYPY_PACKAGES) $(VENV)/bin/mypy -p memnest_daemon -p memnest_shims \
		-p memnest_proto

# The real editor CLIs the end-to-end tests drive, from npm, into .tools/editors (once per
# set of versions: the stamp names them). Claude Code and Codex ship their native binaries
# inside registry packages.
CLAUDE_CODE_VERSION := 2.1.332
GEMINI_CLI_VERSION := 0.61.0
CODEX_VERSION := 0.171.0
EDITORS := .tools/editors
EDITORS_STAMP := $(EDITORS)/.installed-$(CLAUDE_CODE_VERSION)-$(GEMINI_CLI_VERSION)-$(CODEX_VERSION)

editors: $(EDITORS_STAMP)

$(EDITORS_STAMP):
	mkdir -p $(EDITORS)
	npm install --prefix $(EDITORS) --no-audit --no-fund --save-exact \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) \
		@google/gemini-cli@$(GEMINI_CLI_VERSION) @openai/codex@$(CODEX_VERSION)
	$(EDITORS)/node_modules/.bin/claude --version
	$(EDITORS)/node_modules/.bin/gemini --version
	$(EDITORS)/node_modules/.bin/codex --version
	touch $@

# axe-core, the accessibility checker the workbench's browser tests run on its main views.
AXE_VERSION := 4.14.1
AXE := .tools/axe
AXE_STAMP := $(AXE)/.installed-$(AXE_VERSION)

axe: $(AXE_STAMP)

$(AXE_STAMP):
	mkdir -p $(AXE)
	npm install --prefix $(AXE) --no-audit --no-fund --save-exact axe-core@$(AXE_VERSION)
	test -s $(AXE)/node_modules/axe-core/axe.min.js
	touch $@

# Debian's Chromium and its driver, which the workbench's browser tests drive, installed
# before the tests run (tests/support.py install_chromium: apt-get, as root, when missing):
# installed during the run, they change /etc, and the tripwire fails the run for that.
.PHONY: chromium
chromium: install
	PYTHONPATH=tests $(PY) -c "from support import install_chromium; \
		print(install_chromium() or 'chromium: installed')"

proto: install
	$(PY) proto/generate.py

bench: install
	$(PY) bench/core.py

# The performance targets as ratios against floors measured in the same run (bench/perf.py;
# --quick for a smoke run, --scale 100000 for the 100k figures).
.PHONY: bench-perf
bench-perf: install
	$(PY) bench/perf.py

# Retrieval quality: gold-evidence recall and MRR on the LOCOMO conversations (bench/locomo.py).
.PHONY: bench-locomo
bench-locomo: install
	$(PY) bench/locomo.py

stop:
	-$(VENV)/bin/memnest-ctl stop

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache .tools
