# The few commands a newcomer needs. `make reproduce` regenerates every brief; `make test` tests.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
export DVC_NO_ANALYTICS := 1

# Debian packages the pipeline and the tests run: PDF rendering, the workload tools, a real sshd.
APT_PACKAGES := chromium poppler-utils fonts-liberation fio rocksdb-tools postgresql postgresql-client \
                openssh-server openssh-client xfsprogs util-linux procps sshfs fuse3 ipmitool freeipmi-tools sudo \
                nbdkit libnbd-bin nbd-client nvme-cli
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: help setup system python reproduce test lint test-unit test-notebooks lab notebooks lock clean params-layout

help:
	@echo "make reproduce   set up, then regenerate every brief into reports/ (dvc repro)"
	@echo "make test        set up, then run the tests (ruff, the layers contract, pytest, nbval)"
	@echo "make lab         JupyterLab on notebooks/ with the project's environment"
	@echo "make notebooks   re-execute the committed notebooks (the outputs nbval compares)"
	@echo "make lock        re-pin requirements.lock from requirements.in"

setup: system python

system:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "== installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "== Debian packages: all present"; fi

python: $(VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "requirements.lock pins Python 3.11; run make PYTHON=python3.11 ...")'
	@echo "== Python environment in $(VENV) (requirements.lock)"
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --require-hashes -r requirements.lock
	$(BIN)/pip install -q --no-deps -e .
	touch $@

reproduce: setup
	dvc repro
	@ls -l reports/*.html reports/*.pdf

test: setup lint test-unit test-notebooks

# Style, and the layers contract of pyproject.toml (a module imports only from the layers below it).
lint:
	ruff check src tests benchmarks
	lint-imports

test-unit:
	pytest tests

# nbval, pinned to the committed data: the reference datasets are built from `git archive HEAD` (data,
# notebooks, params.yaml) into a temporary checkout, so a user's own campaigns in data/raw never change
# the check. Strict: every text/Markdown/HTML table output is compared (a changed number fails).
# Figures are excluded: the checked run draws them as PNG (BRIEFKIT_FIGURES=png), which nbval does not
# compare, and `make notebooks` strips them from the committed notebooks, so the .ipynb diff shows prose,
# calls and tables, never generated images (reports/ keep SVG figures).
# inside the checkout: two checkouts on one machine never share (or delete) each other's reference
NB_REF ?= $(CURDIR)/.nbval-reference
define reference_data
	rm -rf $(NB_REF) && mkdir -p $(NB_REF)
	git archive HEAD data notebooks params.yaml | tar -x -C $(NB_REF)
	for b in $$(BRIEFKIT_ROOT=$(NB_REF) briefkit list | cut -f1); do \
	  BRIEFKIT_ROOT=$(NB_REF) briefkit dataset --quiet $$b || exit 1; done
endef

# The notebooks nbval checks, named one by one (never a glob): a scratch notebook an analyst saves in
# notebooks/ is neither checked nor re-executed. tests/test_notebook_set.py keeps this list in step with
# the brief notebooks of params.yaml.
NOTEBOOKS := notebooks/fio_mix.ipynb notebooks/rocksdb_sweep.ipynb notebooks/rocksdb_suite.ipynb \
             notebooks/oltp_ramp.ipynb notebooks/explore.ipynb

test-notebooks:
	$(reference_data)
	BRIEFKIT_PROCESSED=$(NB_REF)/data/processed BRIEFKIT_FIGURES=png \
	  pytest -p no:cacheprovider --nbval --nbval-current-env --nbval-sanitize-with tests/nbval-sanitize.cfg \
	  $(NOTEBOOKS)

# Refresh the outputs nbval compares, the same pinned way (commit data changes first).
notebooks: setup
	$(reference_data)
	for nb in $(NOTEBOOKS); do \
	  BRIEFKIT_PROCESSED=$(NB_REF)/data/processed BRIEFKIT_FIGURES=png \
	    jupyter nbconvert --to notebook --execute --inplace "$$nb" || exit 1; done
	python -m briefkit.report.display strip-figures $(NOTEBOOKS)

lab: setup
	jupyter lab --notebook-dir=notebooks --no-browser --ip=127.0.0.1 $(ROOT_FLAG)

lock:
	$(BIN)/pip install -q uv
	$(BIN)/uv pip compile --python-version 3.11 --generate-hashes requirements.in -o requirements.lock

# params.yaml in the layout `dvc exp run -S` writes (DVC's own writer, no override), so that an -S changes
# only the lines it sets: run after editing params.yaml (tests/test_dvc_exp.py checks it).
params-layout:
	python -c "from dvc.utils.hydra import apply_overrides; apply_overrides('params.yaml', [])"

clean:
	rm -rf reports/*.ipynb reports/*.html reports/*.pdf data/processed
