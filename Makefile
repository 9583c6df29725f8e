# Entry points; each creates the virtual environment on first use (see tools/install.sh).
VENV ?= .venv
STAMP := $(VENV)/.sknd-installed
DOCS_EXTRA_MODULES := sphinx, pydata_sphinx_theme, numpydoc, sphinx_gallery, myst_parser, matplotlib

.PHONY: demo lint test docs docs-clean
demo: $(STAMP)
	$(VENV)/bin/python examples/demo.py

# The lints CI runs (ruff is in the test extra): rules and line length in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check sknd tests benchmarks examples
	$(VENV)/bin/ruff format --check sknd tests benchmarks examples

test: $(STAMP)
	$(VENV)/bin/python -m pytest

# The Sphinx site, warnings as errors, into docs/_build/html (runs every script in examples/).
# Needs the docs extra: $(VENV)/bin/python -m pip install -e ".[docs]"
# Without the extra: one line naming it (make's $(error), expanded once .venv exists).
docs: $(STAMP)
	$(if $(shell $(VENV)/bin/python -c "import $(DOCS_EXTRA_MODULES)" 2>/dev/null && echo ok),,$(error \
	  make docs needs the docs extra: $(VENV)/bin/python -m pip install -e ".[docs]"))
	$(VENV)/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html
	$(VENV)/bin/python tools/check_docs.py docs/_build/html

docs-clean:
	rm -rf docs/_build docs/auto_examples docs/api/generated docs/api/sknd*.rst docs/sg_execution_times.rst

$(STAMP): pyproject.toml tools/install.sh
	bash tools/install.sh $(VENV)
	touch $(STAMP)
