# The commands the README promises: `make demo` runs the main job (a short real tuning run,
# then the best config it found and a benchmark of it), `make test` runs the linter (ruff,
# configured in pyproject.toml) and the tests.
# Both create .venv on first use and are quick afterwards (pip runs only when pyproject.toml changed).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
AUTOSCHED := $(VENV)/bin/autosched
DEMO_DB := demo.db

.PHONY: demo demo-compiler test clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	$(AUTOSCHED) tune matmul 256 256 256 --trials 32 --db $(DEMO_DB)
	$(AUTOSCHED) log best matmul 256 256 256 --db $(DEMO_DB)
	$(AUTOSCHED) bench matmul 256 256 256 --db $(DEMO_DB)

demo-compiler: $(VENV)/.installed
	$(PY) examples/compiler_demo.py

test: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

clean:
	rm -rf $(VENV)
