# The few commands a newcomer needs. `make reproduce` regenerates every brief; `make test` tests.
# The interpreter the venv is made from: Debian's own python3.11 where the system has it, else python3 on
# PATH. Debian builds its interpreter with profile-guided optimisation and links libpython into it; a
# python3 built by pyenv or from source without --enable-optimizations, and through a shared libpython,
# took 16-17 % more CPU for briefkit's own Python work on the development machine (imports, a dataset
# build; 6 % for a notebook check, much of it C: benchmarks/interpreter_speed.py), and a fresh clone's
# `make test` went from about 8 min 30 s to 7 min 22 s (medians) with Debian's. `make PYTHON=...` chooses.
DEBIAN_PYTHON := $(wildcard /usr/bin/python3.11)
PYTHON ?= $(if $(DEBIAN_PYTHON),$(DEBIAN_PYTHON),python3)
VENV   ?= .venv
BIN    := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
export DVC_NO_ANALYTICS := 1
# Python writes each module's bytecode (.pyc) the first time it is imported, as it does by default: where
# the environment turns that off (PYTHONDONTWRITEBYTECODE, set on some CI images), every stage, kernel and
# test worker compiled briefkit and its dependencies anew. Lazily, only what is imported is compiled.
unexport PYTHONDONTWRITEBYTECODE

# Debian packages the pipeline and the tests run: PDF rendering, the workload tools, a real sshd.
APT_PACKAGES := chromium poppler-utils fonts-liberation fio rocksdb-tools postgresql postgresql-client \
                openssh-server openssh-client xfsprogs util-linux procps sshfs fuse3 ipmitool freeipmi-tools sudo \
                nbdkit libnbd-bin nbd-client nvme-cli strace
# venv for Debian's python3.11 (a separate package there), when the venv is made from it (PYTHON above)
APT_PACKAGES += $(if $(filter /usr/bin/python3.11,$(PYTHON)),python3.11-venv)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: help setup system python reproduce briefs test test-fast lint test-unit test-notebooks lab notebooks lock clean params-layout docs-params theme

help:
	@echo "make reproduce   set up, then regenerate every brief into reports/ (dvc repro, briefs in parallel)"
	@echo "make briefs      what make reproduce runs after the set-up (REPRODUCE_JOBS briefs at once)"
	@echo "make test        set up, then run the tests (ruff, the layers contract, pytest, nbval)"
	@echo "make test-fast   the inner loop: pytest without the tests marked slow (no lint, no nbval)"
	@echo "make lab         JupyterLab on notebooks/ with the project's environment"
	@echo "make notebooks   re-execute the committed notebooks (the outputs nbval compares)"
	@echo "make lock        re-pin requirements.lock from requirements.in"
	@echo "make docs-params docs/params.md, the params.yaml reference, from the JSON Schema"
	@echo "make theme       the briefs' figure theme (theme.json) from seaborn's set_theme"

setup: system python

system:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "== installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "== Debian packages: all present"; fi

python: $(VENV)/.installed

# uv installs from the same hashed lock as pip would, in parallel and with a line per step; pinned so a
# fresh clone installs with the installer it was tested with. Any failure stops the set-up (no fallback).
# No --compile-bytecode: compiling every installed package costs 27 CPU-s (17.6 s), and the pipeline
# imports a fraction of them, compiled on first import (see PYTHONDONTWRITEBYTECODE above). A cold make
# test compiles for 14 CPU-s in all its processes together (8 if each module were compiled only once).
UV_VERSION := 0.13.9
UV := $(BIN)/uv
UV_PIP := $(UV) pip install --python $(BIN)/python

$(VENV)/.installed: requirements.lock requirements-override.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "requirements.lock pins Python 3.11; run make PYTHON=python3.11 ...")'
	@echo "== [1/4] virtual environment $(VENV), from $(PYTHON) ($$($(PYTHON) --version))"
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	@echo "== [2/4] the installer: uv $(UV_VERSION)"
	$(BIN)/pip install --disable-pip-version-check --progress-bar off uv==$(UV_VERSION)
	@echo "== [3/4] dependencies from requirements.lock (hashes checked)"
	$(UV_PIP) --require-hashes --no-deps -r requirements.lock
	@echo "== [4/4] briefkit itself (editable)"
	$(UV_PIP) --no-deps -e .
	touch $@

reproduce: setup
	@$(MAKE) --no-print-directory briefs

# `dvc repro` runs one stage at a time, but the briefs' chains (dataset -> notebook -> render) share no
# stage, and DVC releases its repository lock while a stage's command runs: one `dvc repro render@BRIEF`
# per brief, as many at once as there are cores (--wait-for-lock: each waits for the others' short turns
# at dvc.lock; a stage's own check of dvc.lock reads it again while another process rewrites it, see
# briefkit.config.dvclock), gave the same dvc.lock and notebooks byte for byte in 55.5 s instead of 83.9 s on 2 cores
# (benchmarks/reproduce_whole.py, medians of 5 pairs). The campaigns under measure: are measured first,
# in one `dvc repro`, one at a time: two campaigns on one host at once would disturb each other's
# figures, and one on this machine would race the notebooks (xargs -r: none declared, none run; a plain
# `dvc repro measure` would then run the whole pipeline). The last `dvc repro` runs any stage no brief
# leads to and says whether the pipeline is up to date.
# First, `briefkit dvc-lock`: a dvc.lock that a Ctrl-C cut while DVC was writing it (DVC writes it in
# place) would make every dvc command fail; it is put back from the last whole copy, saying what runs again.
# Then the list of campaigns dvc.yaml builds a dataset part of (data/raw/campaigns.yaml): a campaign folder
# copied in by hand gets its stage.
REPRODUCE_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
briefs:
	briefkit dvc-lock
	briefkit list --campaigns --write > /dev/null
	briefkit list --measured | xargs -r dvc repro
	briefkit list | cut -f1 | xargs -P $(REPRODUCE_JOBS) -I{} dvc --wait-for-lock repro render@{}
	dvc repro
	@ls -l reports/*.html reports/*.pdf

# The reference datasets are built once, first (make test-notebooks would build them again after the
# tests, which also use them: BRIEFKIT_TEST_REFERENCE, tests/conftest.py reference_data).
test: setup lint
	$(reference_data)
	BRIEFKIT_TEST_REFERENCE=$(NB_REF) $(PYTEST_PARALLEL) tests
	$(nbval)

# Style, and the layers contract of pyproject.toml (a module imports only from the layers below it).
lint:
	ruff check src tests benchmarks
	lint-imports

# pytest in parallel (pytest-xdist): TEST_WORKERS processes; a test goes to whichever worker is free,
# except that the tests sharing a module-scoped fixture stay together on one worker, in file order
# (tests/conftest.py marks them). Two workers per core: with one per core the 2-core machine sat idle 45 %
# of the run, since the real-tool tests mostly wait on fio, sshd or PostgreSQL (15 min 6 s with 2 workers,
# 11 min 52 s with 4, CPU used 55 % -> 70 %); the tests that interrupt a tool at a chosen moment passed
# at a load of 5. `make test TEST_WORKERS=2` on a machine busy with other work. Three per core were no
# faster on fresh clones of the same commit (pytest 8 min 34 s against 8 min 40 s, one run each).
# Fixtures are per worker: ports come from the kernel (free_port), folders from tmp_path, so workers never
# meet. nbval is not loaded here (slow to import; only test-notebooks uses it). One worker more than two per
# core: with 4 on the 2-core machine the run still used only about 80 % of the cores (pytest 528 s and 896
# CPU-s on a fresh clone), with 5 it took 505 s (one run each, same clone and commit); `make test-fast`
# took the same with 4 or 5 (90-94 s, two alternated runs each).
TEST_WORKERS ?= $(shell echo $$((2 * $$(nproc 2>/dev/null || echo 1) + 1)))
# --durations: the 25 slowest tests close every run's log, the first place to look when the suite grows
PYTEST_PARALLEL := pytest -n $(TEST_WORKERS) --dist loadgroup -p no:nbval --durations=25

test-unit:
	$(PYTEST_PARALLEL) tests

# The inner loop: everything but the tests marked slow (real campaigns, dvc repro, papermill).
test-fast: python
	$(PYTEST_PARALLEL) -m "not slow" tests

# nbval, pinned to the committed data: the reference datasets are built from `git archive HEAD` (data,
# notebooks, params.yaml) into a temporary checkout, so a user's own campaigns in data/raw never change
# the check. Strict: every text/Markdown/HTML table output is compared (a changed number fails).
# Figures are excluded: the checked run draws them as PNG (BRIEFKIT_FIGURES=png), which nbval does not
# compare, and `make notebooks` strips them from the committed notebooks, so the .ipynb diff shows prose,
# calls and tables, never generated images (reports/ keep SVG figures).
# inside the checkout: two checkouts on one machine never share (or delete) each other's reference
NB_REF ?= $(CURDIR)/.nbval-reference
# The briefs whose datasets are built: every brief of params.yaml (explore.ipynb can show any of them); a
# check of fewer notebooks may name fewer, e.g. `make test-notebooks NOTEBOOKS=notebooks/fio_mix.ipynb
# REFERENCE_BRIEFS=fio-6600ion` (7 of the 11 CPU-s of the five builds are the other briefs').
REFERENCE_BRIEFS ?= $$(BRIEFKIT_ROOT=$(NB_REF) briefkit list | cut -f1)
define reference_data
	rm -rf $(NB_REF) && mkdir -p $(NB_REF)
	git archive HEAD data notebooks params.yaml | tar -x -C $(NB_REF)
	# one process per brief, as many at once as there are cores (each build is single-threaded)
	printf '%s\n' $(REFERENCE_BRIEFS) | BRIEFKIT_ROOT=$(NB_REF) xargs -P $$(nproc) -n 1 briefkit dataset --quiet
endef

# The notebooks nbval checks, one per brief package declared in src/briefkit/briefs (never a glob): a
# scratch notebook an analyst saves in notebooks/ is neither checked nor re-executed. Read from the
# declarations by the interpreter the venv is made from (they import nothing but the standard library),
# so the list is there before the venv; tests/test_notebook_set.py checks it covers params.yaml's briefs.
# Read when a target first uses it, then kept (a target that runs no notebook, such as params-layout, never
# reads it).
NOTEBOOKS = $(eval NOTEBOOKS := $$(or $$(shell PYTHONPATH=src $$(PYTHON) -c 'from briefkit.briefs import \
  notebooks; print(*notebooks())'),$$(error src/briefkit/briefs: the brief packages' declarations could not \
  be read (no notebook list for nbval))))$(NOTEBOOKS)

# One notebook per worker at a time (--dist loadfile: a notebook's cells run in order in one kernel), one
# worker per core, no more workers than notebooks: 37 s -> 20 s for the five on 2 cores.
NB_WORKERS = $(shell n=$(words $(NOTEBOOKS)); p=$$(nproc 2>/dev/null || echo 1); echo $$(( n < p ? n : p )))
define nbval
	BRIEFKIT_PROCESSED=$(NB_REF)/data/processed BRIEFKIT_FIGURES=png \
	  pytest -n $(NB_WORKERS) --dist loadfile -p no:cacheprovider \
	  --nbval --nbval-current-env --nbval-sanitize-with tests/nbval-sanitize.cfg $(NOTEBOOKS)
endef
test-notebooks:
	$(reference_data)
	$(nbval)

# Refresh the outputs nbval compares, the same pinned way (commit data changes first), by briefkit's own
# executor (kernel on Unix sockets, not TCP): only the outputs change, the committed metadata stays.
notebooks: setup
	$(reference_data)
	BRIEFKIT_PROCESSED=$(NB_REF)/data/processed BRIEFKIT_FIGURES=png python -m briefkit.notebooks.execute $(NOTEBOOKS)
	python -m briefkit.report.display strip-figures $(NOTEBOOKS)

lab: setup
	jupyter lab --notebook-dir=notebooks --no-browser --ip=127.0.0.1 $(ROOT_FLAG)

# Keeps the pins already in requirements.lock and adds what requirements.in newly names (uv prefers the
# versions of its output file); `make lock UPGRADE=--upgrade` moves every pin to the newest release.
lock: python
	$(UV) pip compile $(UPGRADE) --python-version 3.11 --generate-hashes --override requirements-override.txt requirements.in -o requirements.lock

# params.yaml in the layout `dvc exp run -S` writes (DVC's own writer, no override), so that an -S changes
# only the lines it sets: run after editing params.yaml (tests/test_dvc_exp.py checks it). A file DVC's
# writer would leave unreadable to DVC is refused first, naming the line (briefkit.config.yamlload).
params-layout:
	python -m briefkit.config.project

# docs/params.md, the params.yaml reference, from the models' JSON Schema (a test checks it is current).
docs-params:
	python -m briefkit.config.reference > docs/params.md

# The briefs' figure theme, written from seaborn's set_theme so that kernels need not import seaborn (and
# scipy.stats with it); a test checks it is current (run it after upgrading seaborn or matplotlib).
theme:
	python -m briefkit.briefs.shared.theme > src/briefkit/briefs/shared/theme.json

clean:
	rm -rf reports/*.ipynb reports/*.html reports/*.pdf data/processed
