# Every target creates or reuses .venv and installs what it needs, so each works
# as the very first command on a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-test

.PHONY: demo test bench bench-peers clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(VENV)/bin/python pyproject.toml
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,bench]"
	$(PY) benchmarks/run.py
	$(PY) benchmarks/higher_order.py

# Each peer is installed on its own, so one that cannot be installed does not stop the others;
# run.py reports the missing ones. torch==2.13.0 is the CPU build on local disk.
bench-peers: $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,bench]"
	for peer in "torch==2.13.0" autograd mygrad "jax jaxlib"; do \
		$(PY) -m pip install --quiet $$peer || echo "could not install $$peer: it will be reported as not installed"; \
	done
	$(PY) benchmarks/run.py --peers
	$(PY) benchmarks/higher_order.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .hypothesis
