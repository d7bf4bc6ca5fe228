# The two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
KERNEL := retrieval-lib

.PHONY: setup demo test test-sdk test-browser lint docs nbval nbval-portable lab sample bench bench-scale refresh clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (retrieval-lib)" >/dev/null
	touch $(STAMP)

# Build (or bring up to date) the embedded sample collection; a no-op when nothing changed.
sample: setup
	$(PY) -m retrieval_lib ingest

# Our own collection, every gate; then a collection built the way a team's pipeline builds one (read-only here):
# inspect it, write its profile, draft a validation set from it (queries about that book), run every notebook on
# it. Its failed gates are findings (exit 1), not errors.
demo: sample
	$(PY) -m retrieval_lib run --params params/demo.yaml
	$(PY) scripts/foreign_ingest.py --collection foreign_book
	QDRANT_COLLECTION_NAME=foreign_book $(PY) -m retrieval_lib inspect --write-profile outputs/profiles/foreign_book.yaml
	QDRANT_COLLECTION_NAME=foreign_book $(PY) -m retrieval_lib draft --out outputs/drafts/foreign_book \
		--profile outputs/profiles/foreign_book.yaml
	$(PY) -m retrieval_lib run --params outputs/drafts/foreign_book/profile.yaml || test $$? -eq 1

# Every core: pytest-xdist runs the suite in parallel (-n auto), then nbval compares the stored notebook outputs.
# The package is byte-compiled first: the suite starts hundreds of Python processes (the CLI, kernels, the
# service), and where PYTHONDONTWRITEBYTECODE is set none of them would keep its compiled modules. The tests
# marked slow (full runs) come first (tests/conftest.py), handed out 16 at most at a time, so both workers start
# on them and neither ends the suite alone on one.
test: sample
	$(PY) -m compileall -q retrieval_lib
	$(PY) -m pytest tests -n auto --maxschedchunk 16
	$(NBVAL)

# Characterisation tests that wait on the SDKs' own default timeouts and backoff (seconds each);
# production always sets its own, so they stay out of the default run.
test-sdk: sample
	$(PY) -m pytest tests -m sdk_defaults

# Notebook 13's review of drafted queries in a real browser (JupyterLab + headless Chromium), with a kernel
# restart; opt-in, not in `make test`. Needs: apt-get install -y chromium chromium-driver.
test-browser: sample
	$(PY) -m pytest tests/browser -m browser -p no:xdist

# The stored notebook outputs, compared cell by cell (nbval), a notebook per worker on every core (each worker
# reads its own copy of the embedded store: notebooks/conftest.py).
NBVAL = $(PY) -m pytest --nbval notebooks --nbval-kernel-name $(KERNEL) --nbval-sanitize-with notebooks/sanitize.cfg \
	-p no:cacheprovider -n auto --dist loadfile
nbval: sample
	$(NBVAL)

# The same comparison under torch's other CPU kernels: stored outputs must not depend on the CPU's float path.
nbval-portable: sample
	ATEN_CPU_CAPABILITY=default $(MAKE) --no-print-directory nbval
	ATEN_CPU_CAPABILITY=avx2 $(MAKE) --no-print-directory nbval

# Lint and types: ruff over the code, mypy over the package.
lint: setup
	$(VENV)/bin/ruff check retrieval_lib tests benchmarks
	$(VENV)/bin/mypy retrieval_lib

# The documentation site (docs/, mkdocs.yml) into site/; warnings (a broken link or anchor) are errors.
docs: setup
	$(VENV)/bin/mkdocs build --strict --site-dir site

# JupyterLab with the project kernel, on this machine only (127.0.0.1), rooted at the project so params/ and
# outputs/ are one click away; it opens on notebooks/. Only the project's kernel is offered. Jupyter refuses to
# run as root unless told, which containers often are.
lab: setup
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks \
		--KernelSpecManager.allowed_kernelspecs=$(KERNEL) --KernelSpecManager.ensure_native_kernel=False \
		--MappingKernelManager.default_kernel_name=$(KERNEL) \
		$(if $(filter 0,$(shell id -u)),--allow-root)

# Re-execute the notebooks in place to record new reference outputs for nbval
# (after an intended change in retrieval behaviour; review the diff before committing).
refresh: sample
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.kernel_name=$(KERNEL) \
		--ExecutePreprocessor.timeout=900 notebooks/[0-9][0-9]_*.ipynb

bench: sample
	$(PY) benchmarks/bench_search.py
	$(PY) benchmarks/bench_api.py
	$(PY) benchmarks/bench_api_concurrency.py
	$(PY) benchmarks/bench_scale.py
	$(PY) benchmarks/bench_scans.py
	$(PY) benchmarks/bench_cohere_cost.py
	$(PY) benchmarks/bench_checks_scale.py
	$(PY) benchmarks/bench_inspect.py
	$(PY) benchmarks/bench_calibration.py physicalai
	$(PY) benchmarks/bench_languages.py

# The embedded engines at 100k points (builds take minutes; run it once).
bench-scale: setup
	$(PY) benchmarks/bench_scale.py --sizes 100000
	$(PY) benchmarks/bench_scans.py --sizes 100000
	$(PY) benchmarks/bench_checks_scale.py --points 100000
	$(PY) benchmarks/bench_inspect.py --sizes 100000
	$(PY) benchmarks/bench_draft.py --scale 100000

clean:
	rm -rf $(VENV) .qdrant
