# The commands the README promises: `make demo` runs the main job (a small CNN, written as
# ONNX by examples/demo_cnn.py, tuned for a minute, compiled with the log, run, and timed
# untuned vs tuned vs ONNX Runtime), `make test` runs the linter (ruff, configured in
# pyproject.toml) and the tests. `make demo-operator` is the same for one matmul.
# Both create .venv on first use and are quick afterwards (pip runs only when pyproject.toml changed).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
AUTOSCHED := $(VENV)/bin/autosched
DEMO_DB := demo.db

.PHONY: demo demo-operator demo-compiler test clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	$(PY) examples/demo_cnn.py demo_cnn.onnx
	$(AUTOSCHED) tune demo_cnn.onnx --time-budget 60s --db $(DEMO_DB)
	$(AUTOSCHED) compile demo_cnn.onnx -o demo_cnn.zip --db $(DEMO_DB)
	$(AUTOSCHED) run demo_cnn.zip --profile
	$(AUTOSCHED) bench demo_cnn.onnx --db $(DEMO_DB)

demo-operator: $(VENV)/.installed
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	$(AUTOSCHED) tune matmul 256 256 256 --trials 32 --db $(DEMO_DB)
	$(AUTOSCHED) log best matmul 256 256 256 --db $(DEMO_DB)
	$(AUTOSCHED) bench matmul 256 256 256 --db $(DEMO_DB)

demo-compiler: $(VENV)/.installed
	$(PY) examples/compiler_demo.py

test: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n 2 --dist worksteal

clean:
	rm -rf $(VENV)
