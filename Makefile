# Entry points; each creates the virtual environment on first use (see tools/install.sh).
VENV ?= .venv
STAMP := $(VENV)/.sknd-installed

.PHONY: demo lint test
demo: $(STAMP)
	$(VENV)/bin/python examples/demo.py

# The lints CI runs (ruff is in the test extra): rules and line length in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check sknd tests benchmarks examples
	$(VENV)/bin/ruff format --check sknd tests benchmarks examples

test: $(STAMP)
	$(VENV)/bin/python -m pytest

$(STAMP): pyproject.toml tools/install.sh
	bash tools/install.sh $(VENV)
	touch $(STAMP)
