# Two entry points; each creates the virtual environment on first use (see tools/install.sh).
VENV ?= .venv
STAMP := $(VENV)/.sknd-installed

.PHONY: demo test
demo: $(STAMP)
	$(VENV)/bin/python examples/demo.py

test: $(STAMP)
	$(VENV)/bin/python -m pytest

$(STAMP): pyproject.toml tools/install.sh
	bash tools/install.sh $(VENV)
	touch $(STAMP)
