# The two commands the README promises: `make demo` runs the main job, `make test` runs the tests.
# Both create .venv on first use and are quick afterwards (pip runs only when pyproject.toml changed).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(PY) -m compiler.demo

test: $(VENV)/.installed
	$(PY) -m pytest

clean:
	rm -rf $(VENV)
