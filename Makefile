# Entry points; each creates the virtual environment on first use (see tools/install.sh).
VENV ?= .venv
# What is installed, one stamp per set of extras: the demo needs sknd alone (torch,
# scikit-learn, skorch...); lint, test and docs need the test extra (which includes sknd).
STAMP := $(VENV)/.sknd-installed
DEMO_STAMP := $(VENV)/.sknd-installed-core
# The docs extra's modules (sphinx-mathjax-offline is a Sphinx extension named with hyphens).
DOCS_EXTRA_MODULES := sphinx pydata_sphinx_theme numpydoc sphinx_gallery myst_parser matplotlib \
	sphinx-mathjax-offline

.PHONY: demo lint test test-all docs docs-clean
demo: $(DEMO_STAMP)
	$(VENV)/bin/python examples/demo.py

# The lints CI runs (ruff is in the test extra): rules and line length in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check sknd tests benchmarks examples
	$(VENV)/bin/ruff format --check sknd tests benchmarks examples

# The fast selection: every test except those marked slow (end-to-end runs, fuzzing, the
# exhaustive checks of every estimator variant, checks in fresh processes, the openEO graphs
# of all but one model: pyproject.toml's marker); test-all runs those too, as CI does.
# Both run the tests in parallel processes (pytest-xdist, in the test extra): one per core,
# at most 4 (each holds torch and its data, about 1 GB); worksteal rebalances the tail of
# uneven tests. Plain `pytest` runs in one process.
XDIST := -n auto --maxprocesses 4 --dist worksteal
test: $(STAMP)
	$(VENV)/bin/python -m pytest $(XDIST) -m "not slow"

test-all: $(STAMP)
	$(VENV)/bin/python -m pytest $(XDIST)

# The Sphinx site, warnings as errors, into docs/_build/html (runs every script in examples/).
# Needs the docs extra: $(VENV)/bin/python -m pip install -e ".[docs]"
# Without the extra: one line naming it (make's $(error), expanded once .venv exists).
docs: $(STAMP)
	$(if $(shell $(VENV)/bin/python -c "import importlib.util as u, sys; \
	  sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))" $(DOCS_EXTRA_MODULES) \
	  2>/dev/null && echo ok),,$(error \
	  make docs needs the docs extra: $(VENV)/bin/python -m pip install -e ".[docs]"))
	$(VENV)/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html
	$(VENV)/bin/python tools/check_docs.py docs/_build/html

# Everything a docs build writes (the gallery's example outputs go to docs/_build too).
docs-clean:
	rm -rf docs/_build docs/auto_examples docs/api/generated docs/api/sknd*.rst docs/sg_execution_times.rst

$(STAMP): pyproject.toml tools/install.sh
	EXTRAS=test bash tools/install.sh $(VENV)
	touch $(STAMP) $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml tools/install.sh
	EXTRAS= bash tools/install.sh $(VENV)
	touch $(DEMO_STAMP)
