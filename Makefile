# Every target creates or reuses .venv and installs what it needs, so each works
# as the very first command on a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-test

.PHONY: demo test docs test-compat bench bench-peers clean coverage-docs

# The NumPy releases the suite runs on (compat/<name>.txt pins NumPy and a SciPy release that
# supports it); each gets its own venv, .venv-<name>.
COMPAT := np126 np20 np22 np24

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# tests/site_package: a library-like package the tests differentiate as installed code
# (non-editable, under site-packages, as a real package is).
SITE_PACKAGE := $(wildcard tests/site_package/pyproject.toml tests/site_package/src/*/*.py)

$(STAMP): $(VENV)/bin/python pyproject.toml $(SITE_PACKAGE)
	$(PY) -m pip install --quiet -e ".[test,dask,docs]"
	$(PY) -m pip install --quiet --force-reinstall --no-deps ./tests/site_package
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(VENV)/bin/vermin --target=3.10- --no-tips --violations --eval-annotations src tests benchmarks examples conftest.py
	$(VENV)/bin/lint-imports --no-cache  # the layers and no import cycles: pyproject.toml, docs/architecture.md
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory docs

# The whole suite on every release in COMPAT (one at a time: the machine has 2 cores), then a
# summary; fails if any release failed. `make test-compat-np126` runs one release.
test-compat:
	@failed=""; for name in $(COMPAT); do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory test-compat-$$name || failed="$$failed $$name"; \
		echo "== $$name: $$(( $$(date +%s) - start )) s"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-compat failed on:$$failed"; exit 1; fi; \
	echo "test-compat passed on: $(COMPAT)"

.venv-%/bin/python:
	$(PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --upgrade pip

.venv-%/.installed-test: .venv-%/bin/python pyproject.toml compat/%.txt $(SITE_PACKAGE)
	.venv-$*/bin/python -m pip install --quiet -c compat/$*.txt -e ".[test,dask]"
	.venv-$*/bin/python -m pip install --quiet --force-reinstall --no-deps ./tests/site_package
	touch $@

.PRECIOUS: .venv-%/bin/python .venv-%/.installed-test

test-compat-%: .venv-%/.installed-test
	@.venv-$*/bin/python -c "import numpy, scipy, sys; print('== $*: Python', sys.version.split()[0], 'NumPy', numpy.__version__, 'SciPy', scipy.__version__)"
	.venv-$*/bin/python -m pytest -q -p no:cacheprovider --ignore=tests/docs  # the docs run once, in make test

# docs/numpy-coverage.md and docs/scipy-coverage.md from the registry
# (tests/test_coverage_docs.py checks them).
coverage-docs: $(STAMP)
	$(PY) -m chainrules.coverage --numpy > docs/numpy-coverage.md
	$(PY) -m chainrules.coverage --scipy > docs/scipy-coverage.md

# The documentation site (mkdocs.yml) into site/; --strict fails the build on any warning (a
# broken link or reference, a page missing from the navigation, a docstring that does not parse).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,dask,bench]"
	$(PY) benchmarks/run.py
	$(PY) benchmarks/higher_order.py
	$(PY) benchmarks/writes.py
	$(PY) benchmarks/checking.py
	$(PY) benchmarks/import_time.py
	$(PY) benchmarks/dask_memory.py  # 400 MB and 4 GB of data as Dask arrays
	$(PY) benchmarks/vectorized.py   # GLM, MLP, GP, elementwise chain, attention: over hand-written
	$(PY) benchmarks/linalg_pullbacks.py  # each linear-algebra pullback over its forward
	$(PY) benchmarks/per_operation.py  # loops, an ODE, a stencil: gradient over plain forward
	$(PY) benchmarks/instructions.py   # the scalar loop's instructions per iteration (callgrind)
	$(PY) benchmarks/installed_package.py  # gradients through twenty functions of an installed package

# Each peer is installed on its own, so one that cannot be installed does not stop the others;
# run.py reports the missing ones. torch==2.13.0 is the CPU build on local disk.
bench-peers: $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,dask,bench]"
	for peer in "torch==2.13.0" "torchdiffeq==0.2.5" autograd mygrad "jax jaxlib"; do \
		$(PY) -m pip install --quiet $$peer || echo "could not install $$peer: it will be reported as not installed"; \
	done
	$(PY) benchmarks/run.py --peers
	$(PY) benchmarks/vectorized.py --peers
	$(PY) benchmarks/higher_order.py
	$(PY) benchmarks/writes.py

clean:
	rm -rf $(VENV) $(addprefix .venv-,$(COMPAT)) build src/*.egg-info .pytest_cache .hypothesis
